-- enqueue.lua: add one or more new jobs of one route, either ready (pushed to the
-- list of their priority, light: payload in the payloads hash, no hash of its
-- own) or scheduled for later (a job hash). All jobs of one call share a
-- priority. A job whose id already exists, or whose unique key is held, is not
-- written; its slot in the reply names the job that holds it.
--
-- Idempotent: a second call with the same arguments (a client retry after the
-- reply was lost) writes nothing and answers as the first did. A fresh id (from
-- NewID) that exists can only be this call's own earlier write: it answers
-- "written" again, and its unique key (held by that same job) is not looked
-- at. A call with a caller-chosen id cannot tell its own earlier write from
-- another caller's job of that id, so it leaves a receipt, its reply, for the
-- receipt TTL, and a second call answers from it.
--
-- KEYS[1]  list    route:{r}:queue:<priority>   LIST  ready job ids
-- KEYS[2]  ZSET    route:{r}:scheduled          id -> run-at ms
-- KEYS[3]  HASH    route:{r}:stats              counters
-- KEYS[4]  HASH    route:{r}:payloads           id -> payload of light jobs
-- KEYS[5]  STRING  route:{r}:receipt:<call>     this call's reply, or the stats key again when it keeps none
-- KEYS[6]     HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[7+4i]  HASH    route:{r}:job:<id_i>      the job (i = 0..n-1)
-- KEYS[8+4i]  STRING  route:{r}:unique:<k_i>    unique lock, or the job key again when the job has none
-- KEYS[9+4i]  STRING  route:{r}:result:<id_i>   its result record (a finished job still holds its id)
-- KEYS[10+4i] HASH    route:{r}:job:<holder>    a debounced job's: the job of the holder of its
--                     unique key as the caller read it, or the job key again (none read)
-- KEYS[7+4n]  ZSET    route:{r}:expiry  id -> when it expires (ms), for jobs with an expiry
-- KEYS[8+4n]  HASH    route:{r}:leases  id -> lease token (a busy key's running jobs, below)
-- KEYS[9+4n]  SET     route:{r}:cancels ids of running jobs whose cancellation was asked for
-- KEYS[10+4n] ZSET    route:{r}:idle   waiting workers: one is woken per job made ready (bn_wake)
-- KEYS[11+4n..22+4n]  the route's flow keys (Keys.FlowKeys, see _flow.lua)
-- ARGV[1]  now (unix ms)
-- ARGV[2]  priority: high|normal|low
-- ARGV[3]  the route's wake channel (published when the list was empty), for
--          workers that take only some tasks (they wait on it, not in the idle set)
-- ARGV[4]  schedule channel (published with the earliest run-at when a job is scheduled)
-- ARGV[5]  n, the number of jobs
-- ARGV[6]  receipt ttl ms: > 0 when a job has a caller-chosen id, else 0 (no receipt)
-- ARGV[7+11i .. 17+11i] per job: id, name, envelope (msgpack), max retries, run-at ms (0 = now),
--          unique ttl ms (0 = none), 1 for a caller-chosen id or 0 for a fresh one (NewID),
--          its flow "name|key", or "" for a job of no flow, until when its unique key
--          is held (s started, c completed, e ended; "" with no key), its debounce ms
--          (0 = none) and its debounce cap ms (0 = none). A keyed job made
--          ready waits in its flow (bn_flow_add); one scheduled for later keeps
--          its flow in its hash (field k) until promote.lua makes it wait there.
--
-- Unique keys (see _unique.lua): a job with a unique key always gets a hash,
-- ready or not, with fields u (the key's suffix), uu (until when it is held)
-- and ut (its ttl), so that the scripts that end the job can free the key.
--
-- Debounce: a job with a debounce whose unique key is held by a job that still
-- waits in the scheduled set — the holder the caller read, passed as its job
-- key — is not written; the holder takes its envelope (args and options) and
-- its run-at moves to now + debounce, capped at its first enqueue (field df)
-- + the cap, and the key's ttl is counted again from that run-at. Its slot in
-- the reply is "{d}" and the holder's id. A holder that is not the one the
-- caller read (the key changed hands since) answers "{r}" and its id, and
-- nothing of the job is written: the caller reads the key again and resends.
-- A second run of the call debounces again with the same arguments, which
-- writes what the first wrote.
-- ARGV[7+11n+i]  per job: when it expires (unix ms), or 0 for a job that does
--          not: a job with an expiry enters the expiry set, and a job of a
--          caller-chosen id without one leaves it (an earlier job of that id
--          may have left its entry there, see expire.lua)
-- ARGV[7+12n+i]  per job: what it does when its key is busy (on_busy): "" to
--          wait, "drop:<cap>" or "cancel_running:<cap>", cap the task's max
--          running. The key is busy when its running jobs (those still
--          leased) and its waiting ones number cap or more: drop then
--          refuses the job (its reply slot is " busy"), cancel_running asks
--          the oldest running jobs to stop (as remove.lua does for a running
--          job: cancels set, cancel channel) so that the job can start
-- ARGV[7+13n]  the route's cancel channel
-- Returns: an array of n strings: "" for a job written, " busy" for one refused
--          because its key is busy (on_busy=drop), else the id of the job that
--          already holds its id or unique key, "{d}" and the id of the job it
--          debounced, or "{r}" and the holder's id when the caller must read it again.
local now = bn_num(ARGV[1], 'now')
local prio = ARGV[2]
bn_prio(prio, 'priority')
local n = bn_num(ARGV[5], 'job count')
local receipt_ttl = bn_num(ARGV[6], 'receipt ttl')
if #KEYS ~= 22 + 4 * n or #ARGV ~= 7 + 13 * n then
  error('bananas: enqueue of ' .. n .. ' jobs needs ' .. (22 + 4 * n) .. ' keys and ' .. (7 + 13 * n) .. ' args')
end
local F = bn_flowkeys()
bn_need_type(KEYS[1], 'list', 'ready list')
bn_need_type(KEYS[2], 'zset', 'scheduled set')
bn_need_type(KEYS[4], 'hash', 'payloads hash')
-- Expiry (expire.lua): checked only when a job of the call has one or may
-- clear another's, so that other calls pay nothing for it.
local expiry_key, expiring = KEYS[7 + 4 * n], false
for i = 0, n - 1 do
  if bn_num(ARGV[7 + 11 * n + i], 'expire-at') > 0 or bn_num(ARGV[7 + 11 * i + 6], 'id check flag') == 1 then expiring = true end
end
if expiring then bn_need_type(expiry_key, 'zset', 'expiry set') end
if receipt_ttl > 0 then
  local answered = redis.call('GET', KEYS[5])
  if answered then return cjson.decode(answered) end
end

-- Pass 1: validate every job and find duplicates; nothing is written yet.
-- bn_envelope_is reports whether job's envelope slices (e0, e1, ...) hold env.
local function bn_envelope_is(job, env)
  local want = math.ceil(#env / 60)
  local fields = {}
  for k = 0, want - 1 do fields[#fields + 1] = 'e' .. k end
  if #fields == 0 or redis.call('HEXISTS', job, 'e' .. want) == 1 then return false end
  local got = redis.call('HMGET', job, unpack(fields))
  for k = 1, #got do
    if not got[k] then return false end
  end
  return table.concat(got) == env
end

local reply = {}
local seen_id, seen_unique = {}, {}
local own = {}
-- debounced[i]: the holder's job key, its new run-at and the key's new ttl,
-- for a job that debounces the job holding its key.
local debounced = {}
-- flowed: a job of the call may wait in a flow (keyed, ready now), which
-- only then has its flow keys checked (bn_flow_repair): a call of jobs of
-- no key, or of keyed jobs scheduled for later, pays nothing for flows.
local flowed = false
for i = 0, n - 1 do
  local a = 7 + 11 * i
  local id = bn_str(ARGV[a], 'job id')
  local flow = ARGV[a + 7]
  if flow ~= '' and string.sub(flow, 1, #ARGV[a + 1] + 1) ~= ARGV[a + 1] .. '|' then
    error('bananas: a job\'s flow must be its task name, | and its key')
  end
  if string.find(bn_str(ARGV[a + 1], 'task name'), '|', 1, true) then error('bananas: task name must not contain |') end
  bn_str(ARGV[a + 2], 'envelope')
  if bn_num(ARGV[a + 3], 'max retries') < 0 then error('bananas: max retries must be >= 0') end
  if bn_num(ARGV[a + 4], 'run-at') <= now and flow ~= '' then flowed = true end
  local uttl = bn_num(ARGV[a + 5], 'unique ttl')
  local check = bn_num(ARGV[a + 6], 'id check flag') == 1
  local job, ukey, held = KEYS[7 + 4 * i], KEYS[8 + 4 * i], KEYS[10 + 4 * i]
  local debounce, cap = bn_num(ARGV[a + 9], 'debounce'), bn_num(ARGV[a + 10], 'debounce cap')
  if uttl > 0 then
    if ARGV[a + 8] ~= 's' and ARGV[a + 8] ~= 'c' and ARGV[a + 8] ~= 'e' then error('bananas: unique until must be s, c or e') end
    if not string.find(ukey, ':unique:', 1, true) then error('bananas: a unique key must be a route\'s unique:<k> key') end
  end
  if debounce < 0 or cap < 0 then error('bananas: debounce and its cap must be >= 0') end
  if debounce > 0 and uttl <= 0 then error('bananas: a debounce needs a unique key') end
  local holder = ''
  local exists = seen_id[id] or redis.call('EXISTS', job, KEYS[9 + 4 * i]) > 0 or redis.call('HEXISTS', KEYS[4], id) == 1
  if exists and not check then
    own[i] = true -- this call's own earlier write (see above)
  elseif exists then
    holder = id
  elseif uttl > 0 then
    holder = seen_unique[ukey] or bn_checked('unique key', 'string', 'GET', ukey) or ''
    if holder ~= '' and debounce > 0 and not seen_unique[ukey] then
      if held ~= job and string.sub(held, -(#holder + 5)) == ':job:' .. holder then
        local s = redis.call('ZSCORE', KEYS[2], holder)
        if s and bn_typeof(held) == 'hash' then
          local f = redis.call('HMGET', held, 'u', 'df', 'c')
          if f[1] and string.sub(ukey, -(#f[1] + 8)) == ':unique:' .. f[1] then
            local first = tonumber(f[2] or f[3] or '') or now
            local at = now + debounce
            if cap > 0 then at = math.min(at, math.max(first + cap, now)) end
            -- A resend of this call finds its own debounce done: the same
            -- run-at, and the same envelope (counted and written once).
            local resent = tonumber(s) == at and bn_envelope_is(held, ARGV[a + 2])
            if not resent then debounced[i] = {held, at, math.max(1, at - now + uttl), first} end
            holder = '{d}' .. holder
          end
        end
      else
        holder = '{r}' .. holder
      end
    end
  end
  if holder == '' and not own[i] then
    seen_id[id] = true
    if uttl > 0 then seen_unique[ukey] = id end
  end
  reply[i + 1] = holder
end

-- A busy key's policy (on_busy), read before any write: the jobs refused
-- (drop) join the reply, the running jobs to cancel are collected.
local to_cancel = {}
local policies = false
for i = 0, n - 1 do
  if ARGV[7 + 12 * n + i] ~= '' then policies = true end
end
if policies then
  bn_need_type(KEYS[8 + 4 * n], 'hash', 'leases hash')
  bn_need_type(KEYS[9 + 4 * n], 'set', 'cancels set')
  bn_str(ARGV[7 + 13 * n], 'cancel channel')
  bn_flow_repair(F)
  local added, asked = {}, {}
  for i = 0, n - 1 do
    local policy = ARGV[7 + 12 * n + i]
    local a = 7 + 11 * i
    local flow = ARGV[a + 7]
    if policy ~= '' and reply[i + 1] == '' and not own[i] then
      local mode, cap = string.match(policy, '^(%a[%a_]*):(%d+)$')
      cap = tonumber(cap)
      if (mode ~= 'drop' and mode ~= 'cancel_running') or not cap or cap < 1 or flow == '' then
        error('bananas: on_busy of a job must be drop:<cap> or cancel_running:<cap> on a keyed job, got ' .. policy)
      end
      local running = {}
      for _, h in ipairs(bn_flow_state(F, flow).holders) do
        if redis.call('HEXISTS', KEYS[8 + 4 * n], h) == 1 and not asked[h] and redis.call('SISMEMBER', KEYS[9 + 4 * n], h) == 0 then
          running[#running + 1] = h
        end
      end
      local p = bn_len4(#flow) .. flow
      local waiting = added[flow] or 0
      for k = 1, 3 do waiting = waiting + redis.call('ZLEXCOUNT', F.keyed[k], '[' .. p, '(' .. p .. ':') end
      local over = #running + waiting + 1 - cap
      if over > 0 and mode == 'drop' then
        reply[i + 1] = ' busy'
      else
        for k = 1, math.min(math.max(over, 0), #running) do
          asked[running[k]] = true
          to_cancel[#to_cancel + 1] = running[k]
        end
        added[flow] = (added[flow] or 0) + 1
      end
    end
  end
end

-- Pass 2: write the jobs that are new; the list, the payloads and the set take
-- them in one call each (per 200).
local written, earliest = 0, nil
local ready, payloads, later, keyed = {}, {}, {}, {}
if flowed then bn_flow_repair(F) end
for i = 0, n - 1 do
  if reply[i + 1] == '' and not own[i] then
    local a = 7 + 11 * i
    local id, run_at, uttl, flow = ARGV[a], tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), ARGV[a + 7]
    local ukey = KEYS[8 + 4 * i]
    local small = {'n', ARGV[a + 1], 'p', prio, 'm', ARGV[a + 3], 'c', now}
    if uttl > 0 then
      local u = string.match(ukey, '.*:unique:(.*)$')
      for _, v in ipairs({'u', u, 'uu', ARGV[a + 8], 'ut', uttl}) do small[#small + 1] = v end
    end
    if run_at > now then
      if flow ~= '' then
        small[#small + 1] = 'k'
        small[#small + 1] = flow
      end
      bn_write_job(KEYS[7 + 4 * i], small, ARGV[a + 2])
      later[#later + 1] = run_at
      later[#later + 1] = id
      if earliest == nil or run_at < earliest then earliest = run_at end
    elseif uttl > 0 then
      -- Ready, with a hash of its own instead of a payload (see above).
      bn_write_job(KEYS[7 + 4 * i], small, ARGV[a + 2])
      if flow ~= '' then keyed[#keyed + 1] = {id, flow} else ready[#ready + 1] = id end
    elseif flow ~= '' then
      keyed[#keyed + 1] = {id, flow}
      payloads[#payloads + 1] = id
      payloads[#payloads + 1] = bn_payload(ARGV[a + 1], prio, ARGV[a + 3], now, ARGV[a + 2])
    else
      ready[#ready + 1] = id
      payloads[#payloads + 1] = id
      payloads[#payloads + 1] = bn_payload(ARGV[a + 1], prio, ARGV[a + 3], now, ARGV[a + 2])
    end
    if uttl > 0 then redis.call('SET', ukey, id, 'PX', uttl) end
    local expire_at = tonumber(ARGV[7 + 11 * n + i])
    if expire_at > 0 then
      redis.call('ZADD', expiry_key, expire_at, id)
    elseif tonumber(ARGV[a + 6]) == 1 then
      redis.call('ZREM', expiry_key, id)
    end
    written = written + 1
  end
end
for i, d in pairs(debounced) do
  -- The holder takes the new envelope whole: its old slices go first.
  local held, at, kttl, first = d[1], d[2], d[3], d[4]
  local gone = {}
  for _, f in ipairs(redis.call('HKEYS', held)) do
    if string.find(f, '^e%d+$') then gone[#gone + 1] = f end
  end
  if #gone > 0 then bn_sliced('HDEL', held, gone) end
  bn_write_job(held, {'df', first}, ARGV[7 + 11 * i + 2])
  redis.call('ZADD', KEYS[2], at, string.sub(reply[i + 1], 4))
  redis.call('PEXPIRE', KEYS[8 + 4 * i], kttl)
  bn_count(KEYS[3], 'debounced', 1)
  if earliest == nil or at < earliest then earliest = at end
end
if #payloads > 0 then bn_sliced('HSET', KEYS[4], payloads) end
if #ready > 0 then
  local was_empty = redis.call('LLEN', KEYS[1]) == 0
  bn_sliced('RPUSH', KEYS[1], ready)
  bn_wake(F.idle, #ready, now)
  if was_empty then redis.call('PUBLISH', ARGV[3], '1') end
end
if #keyed > 0 then
  local woke, waiting, seq = 0, {}, bn_flow_next_seq(F, #keyed)
  for n, j in ipairs(keyed) do
    woke = woke + bn_flow_add(F, bn_prio(prio, 'priority'), bn_member(j[2], seq + n - 1, j[1]), j[1], waiting)
  end
  bn_wake(F.idle, woke, now)
  if woke > 0 then redis.call('PUBLISH', ARGV[3], '1') end
end
if #later > 0 then bn_sliced('ZADD', KEYS[2], later) end
if written > 0 then
  bn_count(KEYS[3], 'enqueued', written)
  bn_series(KEYS[6], now, 'e', written)
end
if earliest ~= nil then redis.call('PUBLISH', ARGV[4], tostring(earliest)) end
for _, id in ipairs(to_cancel) do
  redis.call('SADD', KEYS[9 + 4 * n], id)
  redis.call('PUBLISH', ARGV[7 + 13 * n], id)
end
if receipt_ttl > 0 then redis.call('SET', KEYS[5], cjson.encode(reply), 'PX', receipt_ttl) end
return reply
