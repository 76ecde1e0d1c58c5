-- _prelude.lua, a shared file (a script is loaded with the shared definitions
-- it names, see queue/scripts.go), holds the steps many transitions share:
-- counters, the endings every failure path shares, wake-ups, the light jobs'
-- payloads.

-- bn_count adds n to a counter of a stats hash and never raises: a counter
-- that is not an integer (garbage), or a stats key of another type, is reset
-- to n. Counters are for metrics; a scrambled one must not fail the
-- transition it counts, which has already written.
local function bn_count(stats, field, n)
  local r = redis.pcall('HINCRBY', stats, field, n)
  if type(r) == 'table' and r['err'] then
    if not bn_type(stats, 'hash') then redis.call('DEL', stats) end
    redis.call('HSET', stats, field, n)
  end
end

-- bn_series adds n to what (a queue.Series* name, or a time bucket w<i>
-- or t<i>) for the minute of now (unix ms) in series, the route's stats
-- series hash of that hour (Keys.Series, which the caller picks from the same
-- now), kept 25 hours. Like bn_count it never raises: the series is for charts.
local function bn_series(series, now, what, n)
  if n == 0 then return end
  local field = (math.floor(now / 60000) % 60) .. ':' .. what
  local r = redis.pcall('HINCRBY', series, field, n)
  if type(r) == 'table' and r['err'] then
    if not bn_type(series, 'hash') then redis.call('DEL', series) end
    redis.call('HSET', series, field, n)
    r = n
  end
  -- The expiry is set when a field is born (its count is n), the first of
  -- each kind in a minute, not on every count.
  if r == n then redis.call('PEXPIRE', series, 90000000) end
end

-- bn_check_buckets raises unless ARGV[from .. to] are pairs of a series
-- time bucket field (w<i> a wait, t<i> a run time) and a count > 0, the
-- call's jobs summed by the caller (an ack's, a batch's settle).
local function bn_check_buckets(from, to)
  for i = from, to, 2 do
    if not string.match(bn_str(ARGV[i], 'bucket field'), '^[wt]%d%d?$') then error('bananas: bad series bucket field ' .. ARGV[i]) end
    if bn_num(ARGV[i + 1], 'bucket count') < 1 then error('bananas: series bucket count must be > 0') end
  end
end

-- bn_series_buckets adds the pairs bn_check_buckets checked to series.
local function bn_series_buckets(series, now, from, to)
  for i = from, to, 2 do bn_series(series, now, ARGV[i], tonumber(ARGV[i + 1])) end
end

local bn_prios = { high = 1, normal = 2, low = 3 }

-- The task history: a script that ends a job for good (completed, dead,
-- canceled) also appends the job's record to the route's ended list, where
-- it waits until a worker has stored it in the history (see
-- queue/ended.go), when its caller keeps a history. The caller says so by
-- giving the ended list as that key; a caller that keeps none gives the
-- route's stats key again, and nothing is appended.
local function bn_ended(ended, stats, record)
  if ended == stats then return end
  -- Garbage under the list's key (another type) must not stop the job's
  -- end: it is replaced, as bn_count replaces a scrambled counter; it held
  -- no record (records only ever go to a list).
  if not bn_type(ended, 'list') then redis.call('DEL', ended) end
  redis.call('RPUSH', ended, record)
end

-- bn_end_canceled ends a job canceled, as every script that can end one does:
-- the job dropped (if job is given: its key, whatever it holds, and its entry
-- in payloads), its canceled record stored for ttl under result and announced
-- on channel, its cancel request (if cancels is given) dropped, and the cancel
-- counted in the route's stats and the hour's stats series.
local function bn_end_canceled(result, record, ttl, channel, cancels, id, stats, series, ended, now, job, payloads)
  if job then
    redis.call('DEL', job)
    redis.call('HDEL', payloads, id)
  end
  redis.call('SET', result, record, 'PX', ttl)
  bn_ended(ended, stats, record)
  redis.call('PUBLISH', channel, record)
  if cancels then redis.call('SREM', cancels, id) end
  bn_count(stats, 'canceled', 1)
  bn_series(series, now, 'c', 1)
end

local function bn_prio(v, what)
  if bn_prios[v] == nil then
    error('bananas: ' .. what .. ' must be high, normal or low, got ' .. tostring(v))
  end
  return bn_prios[v]
end

-- bn_wake wakes up to n of the route's idle workers — those whose fetch
-- found fewer jobs than it asked for (fetch.lua registers them in the idle
-- set, member = the worker's own wake channel, score = until when the entry
-- holds) — by publishing on each one's own channel: a push of n jobs wakes
-- at most n workers, however many wait. The most recently registered goes
-- first (it is the likeliest alive and warm); an entry past its time is
-- dropped with every older one. Returns how many were woken. Like bn_count
-- it never raises: the set is a hint, and an idle key of another type
-- (garbage) is dropped, leaving the workers to their safety poll. The
-- message is '1', or msg when given (wake.lua's hand-on says so: workers
-- ignore it, and a count of wake-ups can tell a push's from a hand-on's).
local function bn_wake(idle, n, now, msg)
  if n < 1 then return 0 end
  local popped = redis.pcall('ZPOPMAX', idle, n)
  if popped['err'] then
    redis.call('DEL', idle)
    return 0
  end
  local woke = 0
  for i = 1, #popped, 2 do
    if tonumber(popped[i + 1]) < now then
      redis.call('ZREMRANGEBYSCORE', idle, '-inf', now)
      break
    end
    redis.call('PUBLISH', popped[i], msg or '1')
    woke = woke + 1
  end
  return woke
end

-- bn_idle registers member (a worker's wake channel) in the idle set until
-- hold (unix ms); like bn_wake it drops an idle key of another type.
local function bn_idle(idle, member, hold)
  local r = redis.pcall('ZADD', idle, hold, member)
  if type(r) == 'table' and r['err'] then
    redis.call('DEL', idle)
    redis.call('ZADD', idle, hold, member)
  end
end

-- bn_push appends id to a ready list and reports whether the list was empty,
-- which is when idle workers must be woken (a non-empty list has a taker already).
local function bn_push(list, id, front)
  local n
  if front then n = redis.call('LPUSH', list, id) else n = redis.call('RPUSH', list, id) end
  return n == 1
end

-- bn_settle ends one failed run of a job whose fence the caller has already
-- checked: either back to the scheduled set for a retry at retry_at, or into the
-- dead set with its failure record stored and announced. prior (failed runs
-- before this one) and max (max retries) are the job's a and m, read and
-- checked by the caller before its first write. A retry is announced on the
-- schedule channel so a sleeping promoter wakes for it. Returns 1 (retry) or 2 (dead).
--
-- The time each failed run ended is kept in field fa<attempt> for a job's
-- timeline, and when it started (started, unix ms; 0 when unknown) in
-- sa<attempt>, the last bn_failed_kept of them: one small field each, so the
-- hash stays a listpack (a list in one field would outgrow 64 bytes).
local bn_failed_kept = 20
local function bn_settle(job, scheduled, dead, result, stats, series, id, now, msg, retry_at, force_dead, record, ttl, channel, sched_channel, prior, max, ended, started)
  local attempts = prior + 1
  bn_count(stats, 'failed', 1)
  bn_series(series, now, 'f', 1)
  if attempts > bn_failed_kept then redis.call('HDEL', job, 'fa' .. (attempts - bn_failed_kept), 'sa' .. (attempts - bn_failed_kept)) end
  if started and started > 0 then redis.call('HSET', job, 'sa' .. attempts, started) end
  if force_dead == 0 and attempts <= max then
    redis.call('HSET', job, 'a', attempts, 'err', msg, 's', 'q', 'fa' .. attempts, now)
    redis.call('ZADD', scheduled, retry_at, id)
    bn_count(stats, 'retried', 1)
    bn_series(series, now, 'r', 1)
    redis.call('PUBLISH', sched_channel, tostring(retry_at))
    return 1
  end
  redis.call('HSET', job, 'a', attempts, 'err', msg, 's', 'x', 'f', now, 'fa' .. attempts, now)
  redis.call('ZADD', dead, now, id)
  redis.call('SET', result, record, 'PX', ttl)
  bn_ended(ended, stats, record)
  bn_count(stats, 'dead', 1)
  bn_series(series, now, 'd', 1)
  redis.call('PUBLISH', channel, record)
  return 2
end

-- bn_write_job creates a job hash: its small fields, then the envelope cut into
-- fields e0, e1, ... of at most 60 bytes. Redis keeps a hash compact (listpack)
-- only while every value is at most 64 bytes (hash-max-listpack-value); a
-- whole 100-byte envelope would make every job a full hashtable, about twice
-- the memory. HSET goes out in slices so a large envelope never overflows the
-- Lua stack.
local function bn_write_job(job, small, env)
  local fields = small
  local k = 0
  for off = 1, #env, 60 do
    fields[#fields + 1] = 'e' .. k
    fields[#fields + 1] = string.sub(env, off, off + 59)
    k = k + 1
    if #fields >= 200 then
      redis.call('HSET', job, unpack(fields))
      fields = {}
    end
  end
  if #fields > 0 then redis.call('HSET', job, unpack(fields)) end
end

-- bn_sliced calls cmd on key with items, at most 200 of them per call: one
-- call for many members instead of one per member, without overflowing the
-- Lua stack on a large batch. Keep items in pairs where cmd wants pairs.
local function bn_sliced(cmd, key, items)
  for first = 1, #items, 200 do
    redis.call(cmd, key, unpack(items, first, math.min(first + 199, #items)))
  end
end

-- bn_drop_ended drops what jobs that ended were, as the acks do: the
-- leases of ids, the payloads of the light ones, the hashes heavy (job
-- keys) and the unique keys freed (their keys), in slices of 200.
local function bn_drop_ended(leases, payloads, ids, light, heavy, freed)
  bn_sliced('HDEL', leases, ids)
  if #light > 0 then bn_sliced('HDEL', payloads, light) end
  for first = 1, #heavy, 200 do
    redis.call('DEL', unpack(heavy, first, math.min(first + 199, #heavy)))
  end
  for first = 1, #freed, 200 do
    redis.call('DEL', unpack(freed, first, math.min(first + 199, #freed)))
  end
end

-- A job enqueued ready to run is "light": it has no hash of its own while it
-- waits and runs. Its id goes in the ready list and its payload in one field
-- of the route's payloads hash (route:{r}:payloads, id -> payload), which costs
-- one field instead of a key, a hash and eight fields per job. The payload is
--   name|priority|max retries|created ms|envelope
-- (names and priorities never hold '|'; the envelope is last, so it may). A
-- light job gets a hash (bn_materialize) only when it fails or its lease is
-- lost; a success leaves just its result record.

-- bn_payload builds the payload of a light job.
local function bn_payload(name, prio, max, created, env)
  return name .. '|' .. prio .. '|' .. max .. '|' .. created .. '|' .. env
end

-- A light job with a unique key carries it in front of its payload, so that
-- the script that ends it can free the key (see _unique.lua):
--   |unique key suffix|until (s, c or e)|ttl ms|name|priority|...
-- A plain payload never starts with '|' (a task name is never empty).

-- bn_payload_unique builds the payload of a light job holding unique key u.
local function bn_payload_unique(u, uu, ttl, payload)
  return '|' .. u .. '|' .. uu .. '|' .. ttl .. '|' .. payload
end

-- bn_split_unique returns the unique key suffix, until and ttl a payload
-- carries, and the plain payload after them; nil when it carries none.
local function bn_split_unique(p)
  if string.sub(p, 1, 1) ~= '|' then return nil end
  local i1 = string.find(p, '|', 2, true)
  local i2 = i1 and string.find(p, '|', i1 + 1, true)
  local i3 = i2 and string.find(p, '|', i2 + 1, true)
  if not i3 or i1 == 2 then return nil end
  return string.sub(p, 2, i1 - 1), string.sub(p, i1 + 1, i2 - 1), string.sub(p, i2 + 1, i3 - 1), string.sub(p, i3 + 1)
end

-- bn_split splits a payload into name, priority, max retries, created and
-- envelope, then the unique key suffix, until and ttl it carries (nil when
-- none); nil when it is not one (a value planted by hand).
local function bn_split(p)
  local u, uu, ut, rest = bn_split_unique(p)
  if u then p = rest end
  local i1 = string.find(p, '|', 1, true)
  local i2 = i1 and string.find(p, '|', i1 + 1, true)
  local i3 = i2 and string.find(p, '|', i2 + 1, true)
  local i4 = i3 and string.find(p, '|', i3 + 1, true)
  if not i4 or i1 == 1 then return nil end
  return string.sub(p, 1, i1 - 1), string.sub(p, i1 + 1, i2 - 1), string.sub(p, i2 + 1, i3 - 1),
    string.sub(p, i3 + 1, i4 - 1), string.sub(p, i4 + 1), u, uu, ut
end

-- bn_materialize gives a light job its hash, from its payload (the unique
-- key it carries, too: fields u, uu, ut, see _unique.lua), and removes the
-- payload, so that retries, the dead-letter set and replay see one kind of job.
-- A payload that does not split, or whose priority or max retries is garbage,
-- is kept whole as the envelope (the worker will report it undecodable) rather
-- than lost. Returns the job's max retries.
local function bn_materialize(job, payloads, id, payload)
  local name, prio, max, created, env, u, uu, ut = bn_split(payload)
  if not name or bn_prios[prio] == nil or #max > 15 or not string.find(max, '^%d+$') then
    name, prio, max, created, env, u = '?', 'normal', '0', '0', payload, nil
  end
  redis.call('HDEL', payloads, id)
  local small = {'n', name, 'p', prio, 'm', max, 'c', created}
  if u then
    for _, v in ipairs({'u', u, 'uu', uu, 'ut', ut}) do small[#small + 1] = v end
  end
  bn_write_job(job, small, env)
  return tonumber(max)
end

-- Leases are kept per fetch call, a lease group: the active set holds each
-- group's token with its deadline, the groups hash how many of its jobs are
-- still leased, and the leases hash each leased job's token. One ZADD per
-- fetch call instead of one member per job (a zset of up to 128 members is a
-- listpack, where every insert is a scan and a memmove: 2.4 µs a member).

-- bn_leased_under returns, as fetch.lua replies, the jobs still leased under
-- token: what a second call with a used token gets instead of new jobs. It
-- reads every lease of the route, which only a retried fetch ever does.
local function bn_leased_under(leases, payloads, token)
  local all = redis.call('HGETALL', leases)
  local ids = {}
  for i = 1, #all, 2 do
    if all[i + 1] == token then ids[#ids + 1] = all[i] end
  end
  local out = {token}
  for first = 1, #ids, 200 do
    local pays = redis.call('HMGET', payloads, unpack(ids, first, math.min(first + 199, #ids)))
    for j = 1, #pays do
      out[#out + 1] = ids[first + j - 1]
      out[#out + 1] = pays[j] or ''
    end
  end
  if #out > 1 then return out end
  return {}
end

-- bn_release ends count leases of group token: when none is left, the group
-- leaves the active set.
--
-- A count that is not an integer (garbage) is set high instead: the group then
-- stays in the active set until its deadline passes unrenewed, and the reaper
-- recovers whatever is still leased in it. Setting it low could take the
-- group out of the active set while some of its jobs are still leased, and a
-- lease whose group is not in the active set is never recovered.
local function bn_release(active, groups, token, count)
  local left = redis.pcall('HINCRBY', groups, token, -count)
  if type(left) == 'table' then
    redis.call('HSET', groups, token, 1000000000)
  elseif left <= 0 then
    redis.call('HDEL', groups, token)
    redis.call('ZREM', active, token)
  end
end

-- Garbage in a job ---------------------------------------------------------
-- Any byte in Redis can be garbage (written by hand, by a foreign tool, by a
-- bug). A script that meets a job it cannot act on does not raise half-way
-- (Redis keeps what was written before the error) and does not skip the job
-- for ever: it checks the job before its first write and, when the job is
-- garbage, dead-letters it with a reason naming what was wrong, where it stays
-- visible and can be replayed once repaired.

-- bn_typeof returns the type of key: 'none', 'string', 'hash', ...
local function bn_typeof(key)
  local t = redis.call('TYPE', key)
  if type(t) == 'table' then t = t['ok'] end
  return t
end

-- bn_shown quotes a stored value for a reason, cut short: garbage can be long.
local function bn_shown(v)
  if #v > 40 then v = string.sub(v, 1, 40) .. '...' end
  return "'" .. v .. "'"
end

-- bn_bad_count returns why v, a count read from a job (attempts a, max
-- retries m), is unusable, or nil when it is a whole number >= 0. Absent is
-- fine where absent_ok (attempts: absent means 0). Only plain digits pass:
-- tonumber would also take '1e3', '0x1f', ' 2' or 'inf', which Go reads as 0.
local function bn_bad_count(v, what, absent_ok)
  if v == nil or v == false then
    if absent_ok then return nil end
    return what .. ' is missing'
  end
  if #v > 15 or not string.find(v, '^%d+$') then
    return what .. ' is not a whole number >= 0: ' .. bn_shown(v)
  end
  return nil
end

-- bn_bad_prio returns why v, a job's priority p, is unusable, or nil.
local function bn_bad_prio(v)
  if v == nil or v == false then return 'its priority (field p) is missing' end
  if bn_prios[v] == nil then
    return 'its priority (field p) is ' .. bn_shown(v) .. ', not high, normal or low'
  end
  return nil
end

-- bn_bury dead-letters a job for a reason of its own, without counting an
-- attempt: the reason becomes its error. The caller has taken the job out of
-- wherever it was; the failure record, where there is one, is the caller's.
local function bn_bury(job, dead, stats, id, now, reason)
  redis.call('HSET', job, 'err', reason, 's', 'x', 'f', now)
  redis.call('ZADD', dead, now, id)
  bn_count(stats, 'dead', 1)
end

-- bn_set_aside moves what a job key held when it is not a job hash (a string,
-- a list, ...) to the job's garbage key, where it is kept for inspection until
-- the dead-lettered job is purged, and returns the reason. The job key is free
-- afterwards: a light job's payload can become its hash, or a stub takes its
-- place (bn_stub).
local function bn_set_aside(job, garbage, kind)
  redis.call('RENAME', job, garbage)
  return 'its job key held a ' .. kind .. ', not a job hash; that value was moved to ' .. garbage
end

-- bn_stub writes the hash of a job of which nothing usable is left, so that it
-- can be dead-lettered and seen; replaying it fails at once (no envelope).
local function bn_stub(job, now)
  redis.call('HSET', job, 'n', '?', 'p', 'normal', 'm', '0', 'c', now)
end
