-- batch_ack.lua: settle the runs of one batch (runtime.HandleBatch) of one
-- route in one call: each completed job as ack.lua completes it (its result
-- record stored with its ttl and announced, appended to the ended list, its
-- lease released, what the job was dropped, a unique key it holds freed),
-- each failed job as fail.lua ends it (a retry after its retry-at while its
-- attempts allow, else the dead-letter set with its failure record; a
-- snooze back to the scheduled set without a failure counted). Each job
-- keeps its own record, attempts and ending; only the call is shared.
--
-- Fenced per job: a job whose token is no longer its lease's (reaped,
-- handed back, timed out and recorded by its worker, or settled by a first
-- run of this call whose reply was lost) is left alone and answers 0, so a
-- second run of the same call settles nothing again. A failed job whose key
-- holds another type than a hash (garbage) is left leased, for the reaper
-- to set the value aside, and answers 0. Every check is made before the
-- first write.
--
-- KEYS[1]   ZSET    route:{r}:active
-- KEYS[2]   HASH    route:{r}:leases
-- KEYS[3]   HASH    route:{r}:stats
-- KEYS[4]   HASH    route:{r}:payloads
-- KEYS[5]   HASH    route:{r}:groups
-- KEYS[6]   HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[7]   ZSET    route:{r}:scheduled
-- KEYS[8]   ZSET    route:{r}:dead
-- KEYS[9]   SET     route:{r}:cancels
-- KEYS[10]  LIST    route:{r}:ended: records appended for the task history,
--           or the stats key again when the caller keeps none
-- KEYS[11+3(i-1) .. 13+3(i-1)] per job i = 1..n: STRING route:{r}:result:<id>,
--           HASH route:{r}:job:<id>, and STRING route:{r}:unique:<u> of the
--           unique key it holds or its job key again (see _unique.lua)
-- KEYS[#KEYS-11..]  the route's flow keys (Keys.FlowKeys): a keyed job's slot is freed
-- ARGV[1]   result channel prefix (a job's channel is prefix .. id .. "}")
-- ARGV[2]   1: announce completions only on channels with a subscriber
--           (standalone Redis); 0: always (Redis Cluster)
-- ARGV[3]   now (unix ms)
-- ARGV[4]   schedule channel (a retry or snooze is announced there)
-- ARGV[5]   b, the number of stats series time buckets that follow
-- ARGV[6 .. 5+2b] pairs bucket field (w<i>, t<i>), count: the completed
--           jobs' waits and run times, summed by the caller
-- ARGV[6+2b+9(i-1) ..] per job i, nine: id, fencing token, how ('c'
--           completed, 'r' failed: retry while attempts allow, 'd' failed
--           for good, 's' snoozed), record (the result record of a
--           completion, the failure record of a failure: opaque bytes, also
--           the pub/sub payload), ttl ms (a completion: 0 stores no record;
--           a failure: > 0), light (1: a completion of a job with no hash,
--           its payload in the payloads hash), error message (failures),
--           retry-at ms (failures; the run-at of a retry or snooze), and
--           started-at of the run (unix ms; a failed run's timeline)
-- Returns: an array with, per job, its ending (queue.Ending): 8 completed,
--          1 retrying, 2 dead, 5 snoozed, 3 the job was gone (its lease
--          released), 0 stale token or left for the reaper (nothing written).
local prefix = bn_str(ARGV[1], 'channel prefix')
local only_heard = bn_num(ARGV[2], 'announce flag') == 1
local now = bn_num(ARGV[3], 'now')
bn_str(ARGV[4], 'schedule channel')
local b = bn_num(ARGV[5], 'bucket count')
local first_job = 6 + 2 * b
local n = (#ARGV - first_job + 1) / 9
if b < 0 or n < 1 or n ~= math.floor(n) then
  error('bananas: batch ack needs a channel prefix, an announce flag, now, a schedule channel, the series buckets, and nine args per job')
end
if #KEYS ~= 22 + 3 * n then error('bananas: batch ack needs ten route keys, three keys per job and the flow keys') end
bn_check_buckets(6, first_job - 1)
local ids, hows, seen, any_failed = {}, {}, {}, false
for i = 1, n do
  local a = first_job + 9 * (i - 1)
  ids[i] = bn_str(ARGV[a], 'job id')
  if seen[ids[i]] then error('bananas: batch ack names job ' .. ids[i] .. ' twice') end
  seen[ids[i]] = true
  bn_str(ARGV[a + 1], 'token')
  hows[i] = bn_str(ARGV[a + 2], 'how')
  if hows[i] ~= 'c' and hows[i] ~= 'r' and hows[i] ~= 'd' and hows[i] ~= 's' then error("bananas: how must be 'c', 'r', 'd' or 's'") end
  local ttl = bn_num(ARGV[a + 4], 'record ttl')
  if ttl < 0 or (hows[i] ~= 'c' and ttl == 0) then error('bananas: a record ttl must be >= 0, and > 0 for a failure') end
  bn_num(ARGV[a + 5], 'light flag')
  bn_num(ARGV[a + 7], 'retry-at')
  bn_num(ARGV[a + 8], 'started-at')
  if hows[i] ~= 'c' then any_failed = true end
end
local ended = KEYS[10]
local F = bn_flowkeys()
bn_need_type(KEYS[1], 'zset', 'active set')
bn_need_type(KEYS[4], 'hash', 'payloads hash')
bn_need_type(KEYS[5], 'hash', 'groups hash')
if any_failed then
  bn_need_type(KEYS[7], 'zset', 'scheduled set')
  bn_need_type(KEYS[8], 'zset', 'dead-letter set')
end

-- The tokens of all the jobs in one read, which checks the leases hash's
-- type (bn_checked) before any write.
local tokens = {}
for first = 1, n, 200 do
  local got = bn_checked('leases hash', 'hash', 'HMGET', KEYS[2], unpack(ids, first, math.min(first + 199, n)))
  for j = 1, #got do tokens[first + j - 1] = got[j] end
end

-- Who is settled, and how, decided by reads only.
local out, done, light, heavy, records, freed, failed, released = {}, {}, {}, {}, {}, {}, {}, {}
local heard_ids, heard_at = {}, {}
for i = 1, n do
  local a = first_job + 9 * (i - 1)
  local result, job, ukey = KEYS[8 + 3 * i], KEYS[9 + 3 * i], KEYS[10 + 3 * i]
  out[i] = 0
  if tokens[i] == ARGV[a + 1] then
    if hows[i] == 'c' then
      local ok = true
      if tonumber(ARGV[a + 5]) == 1 then
        light[#light + 1] = ids[i]
        if bn_unique_ends(job, ukey, ids[i], 'completed', KEYS[4]) then freed[#freed + 1] = ukey end
      elseif redis.call('EXISTS', job) == 1 then
        heavy[#heavy + 1] = job
        if bn_unique_ends(job, ukey, ids[i], 'completed') then freed[#freed + 1] = ukey end
      else
        ok = false
      end
      if ok then
        records[#records + 1] = i
        done[#done + 1] = ids[i]
        released[tokens[i]] = (released[tokens[i]] or 0) + 1
        if only_heard then
          heard_ids[#heard_ids + 1] = prefix .. ids[i] .. '}'
          heard_at[#heard_at + 1] = i
        end
        out[i] = 8
      end
    else
      -- As fail.lua reads a failed job: its hash (attempts, max retries,
      -- the unique key a death frees) or its light payload.
      local kind = bn_typeof(job)
      if kind == 'hash' or kind == 'none' then
        local f = {i = i, job = job, ukey = ukey, exists = kind == 'hash', prior = 0, max = 0}
        if f.exists then
          local c = redis.call('HMGET', job, 'a', 'm')
          f.why = bn_bad_count(c[1], 'its attempts (field a)', true) or bn_bad_count(c[2], 'its max retries (field m)', false)
          if not f.why then f.prior, f.max = tonumber(c[1] or '0'), tonumber(c[2]) end
        else
          f.payload = redis.call('HGET', KEYS[4], ids[i])
        end
        f.frees = bn_unique_ends(job, ukey, ids[i], 'dead', KEYS[4])
        failed[#failed + 1] = f
        released[tokens[i]] = (released[tokens[i]] or 0) + 1
        out[i] = 3
      end
    end
  end
end
local heard = {}
for first = 1, #heard_ids, 200 do
  local subs = redis.call('PUBSUB', 'NUMSUB', unpack(heard_ids, first, math.min(first + 199, #heard_ids)))
  for j = 2, #subs, 2 do heard[heard_at[first + j / 2 - 1]] = tonumber(subs[j]) > 0 end
end
if #done == 0 and #failed == 0 then return out end

-- Writes. What the completed jobs were goes first, as in ack.lua: a call
-- that starts by freeing memory completes whole at maxmemory.
local keyed, route_limited = bn_flow_in_use(F)
if keyed then bn_flow_repair(F) end
local settled = {}
for _, id in ipairs(done) do settled[#settled + 1] = id end
for _, f in ipairs(failed) do settled[#settled + 1] = ids[f.i] end
bn_drop_ended(KEYS[2], KEYS[4], settled, light, heavy, freed)
local kept = {}
for _, i in ipairs(records) do
  local a = first_job + 9 * (i - 1)
  if tonumber(ARGV[a + 4]) > 0 then redis.call('SET', KEYS[8 + 3 * i], ARGV[a + 3], 'PX', ARGV[a + 4]) end
  if not only_heard or heard[i] then redis.call('PUBLISH', prefix .. ids[i] .. '}', ARGV[a + 3]) end
  if ended ~= KEYS[3] then kept[#kept + 1] = ARGV[a + 3] end
end
if #kept > 0 then
  if not bn_type(ended, 'list') then redis.call('DEL', ended) end
  bn_sliced('RPUSH', ended, kept)
end
local woken = 0
if keyed then woken = bn_flow_release_many(F, done, now) end

-- Each failed job as fail.lua ends it.
local cancels = bn_type(KEYS[9], 'set') -- another type: cancels.lua refuses it
for _, f in ipairs(failed) do
  local i, job = f.i, f.job
  local id, a = ids[i], first_job + 9 * (i - 1)
  local member, woke
  if keyed then member, woke = bn_flow_release(F, id, now, false) end
  if woke then woken = woken + 1 end
  if cancels then redis.call('SREM', KEYS[9], id) end
  local max = f.max
  if f.payload then max = bn_materialize(job, KEYS[4], id, f.payload) end
  if f.exists or f.payload then
    local started = tonumber(ARGV[a + 8])
    redis.call('HSET', job, 'st', started)
    if member then
      local flow, seq = bn_member_parts(member)
      redis.call('HSET', job, 'k', flow, 'q', seq)
    end
    local msg, record, ttl, retry_at = ARGV[a + 6], ARGV[a + 3], tonumber(ARGV[a + 4]), tonumber(ARGV[a + 7])
    local channel = prefix .. id .. '}'
    if f.why then
      bn_count(KEYS[3], 'failed', 1)
      bn_series(KEYS[6], now, 'f', 1)
      bn_series(KEYS[6], now, 'd', 1)
      bn_bury(job, KEYS[8], KEYS[3], id, now, 'dead-lettered without a retry: ' .. f.why .. '; the run failed with: ' .. msg)
      redis.call('SET', KEYS[8 + 3 * i], record, 'PX', ttl)
      bn_ended(ended, KEYS[3], record)
      redis.call('PUBLISH', channel, record)
      out[i] = 2
    elseif hows[i] == 's' then
      redis.call('HSET', job, 's', 'q')
      redis.call('ZADD', KEYS[7], retry_at, id)
      bn_count(KEYS[3], 'snoozed', 1)
      redis.call('PUBLISH', ARGV[4], tostring(retry_at))
      out[i] = 5
    else
      out[i] = bn_settle(job, KEYS[7], KEYS[8], KEYS[8 + 3 * i], KEYS[3], KEYS[6], id, now, msg, retry_at,
        hows[i] == 'd' and 1 or 0, record, ttl, channel, ARGV[4], f.prior, max, ended, started)
    end
    if out[i] == 2 and f.frees then redis.call('DEL', f.ukey) end
  end
end

for token, count in pairs(released) do bn_release(KEYS[1], KEYS[5], token, count) end
if route_limited then
  bn_wake(F.idle, #settled, now)
elseif woken > 0 then
  bn_wake(F.idle, woken, now)
end
if #done > 0 then
  bn_count(KEYS[3], 'processed', #done)
  bn_series(KEYS[6], now, 'p', #done)
  bn_series_buckets(KEYS[6], now, 6, first_job - 1)
end
return out
