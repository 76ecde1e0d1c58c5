-- fail.lua: end a failed run. While attempts <= max retries the job goes back to
-- the scheduled set for retry_at (the caller computed the backoff); otherwise, or
-- when the failure is final (a decode error, a payload over the limit), it is
-- dead-lettered and its failure record is stored and announced. Fenced like ack.
--
-- A job whose attempts (a) or max retries (m) field is garbage cannot be
-- counted: it is dead-lettered at once, its error naming the field and the
-- run's failure, so that it can be repaired and replayed. A job key that is
-- not a hash raises before any write: the job stays leased, and the reaper,
-- which can set the value aside, recovers it when its lease expires. Run
-- twice, the second call finds the lease gone and writes nothing (returns 0).
--
-- A cancel request made against the run (asked as it failed, before its
-- worker acted on it) ends with it: a request stands for the run it was made
-- against, and left in the cancels set it would cancel the job's next run,
-- which leases the same id, before cancels.lua drops it.
--
-- KEYS[1]  HASH    route:{r}:job:<id>
-- KEYS[2]  ZSET    route:{r}:active
-- KEYS[3]  HASH    route:{r}:leases
-- KEYS[4]  ZSET    route:{r}:scheduled
-- KEYS[5]  ZSET    route:{r}:dead
-- KEYS[6]  STRING  route:{r}:result:<id>
-- KEYS[7]  HASH    route:{r}:stats
-- KEYS[8]  HASH    route:{r}:payloads  (a light job gets its hash here first)
-- KEYS[9]  HASH    route:{r}:groups
-- KEYS[10] HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[11] SET     route:{r}:cancels
-- KEYS[12] LIST    route:{r}:ended: a dead job's record is appended for the task
--                  history, or the stats key again when the caller keeps none
-- KEYS[13] STRING  route:{r}:unique:<u>, the unique key the job holds, or the job
--                  key again when it holds none: a death frees a key held until
--                  started or ended (see _unique.lua); a retry keeps it
-- KEYS[14..25]  the route's flow keys (Keys.FlowKeys): a keyed job's slot is
--          freed, and its hash keeps its flow and place (fields k and q) for
--          its retry, or a replay, to wait where it waited
-- ARGV[1]  id
-- ARGV[2]  fencing token of the dispatch
-- ARGV[3]  now (unix ms)
-- ARGV[4]  error message
-- ARGV[5]  retry-at (unix ms)
-- ARGV[6]  1 = final, dead-letter whatever the attempts; 0 = retry while attempts allow;
--          2 = snooze: back to the scheduled set for retry-at, no attempt or failure counted
-- ARGV[7]  failure record to store if the job dies (opaque bytes)
-- ARGV[8]  failure result ttl ms (> 0)
-- ARGV[9]  result channel
-- ARGV[10] started-at of the run (unix ms)
-- ARGV[11] schedule channel
-- Returns: 0 stale token (nothing written), 1 scheduled for retry, 2 dead-lettered
--          (also when its a or m field is garbage: its error names the field),
--          3 the job is gone (lease released, nothing else to do), 5 snoozed.
local id = bn_str(ARGV[1], 'job id')
local token = bn_str(ARGV[2], 'token')
local now = bn_num(ARGV[3], 'now')
local retry_at = bn_num(ARGV[5], 'retry-at')
local final = bn_num(ARGV[6], 'final flag')
if final ~= 0 and final ~= 1 and final ~= 2 then error('bananas: final flag must be 0, 1 or 2') end
local ttl = bn_num(ARGV[8], 'failure ttl')
bn_str(ARGV[9], 'result channel')
local started = bn_num(ARGV[10], 'started-at')
bn_str(ARGV[11], 'schedule channel')
if ttl <= 0 then error('bananas: failure ttl must be > 0') end
if redis.call('HGET', KEYS[3], id) ~= token then return 0 end
bn_need_type(KEYS[2], 'zset', 'active set')
bn_need_type(KEYS[4], 'zset', 'scheduled set')
bn_need_type(KEYS[5], 'zset', 'dead-letter set')
bn_need_type(KEYS[9], 'hash', 'groups hash')
local kind = bn_typeof(KEYS[1])
if kind ~= 'hash' and kind ~= 'none' then
  error('bananas: job key ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a job hash; the job stays leased for the reaper')
end
local exists = kind == 'hash'
local payload = not exists and redis.call('HGET', KEYS[8], id)
local prior, max, why = 0, 0, nil
if exists then
  local f = redis.call('HMGET', KEYS[1], 'a', 'm')
  why = bn_bad_count(f[1], 'its attempts (field a)', true) or bn_bad_count(f[2], 'its max retries (field m)', false)
  if not why then prior, max = tonumber(f[1] or '0'), tonumber(f[2]) end
end
local frees = bn_unique_ends(KEYS[1], KEYS[13], id, 'dead', KEYS[8])

local F = bn_flowkeys()
-- A job of no key on a route without flow control pays one EXISTS for it.
local keyed, route_limited = bn_flow_in_use(F)
if keyed then bn_flow_repair(F) end
redis.call('HDEL', KEYS[3], id)
bn_release(KEYS[2], KEYS[9], token, 1)
local member, freed_held
if keyed then member, freed_held = bn_flow_release(F, id, now, false) end
if freed_held or route_limited then bn_wake(F.idle, 1, now) end
if bn_type(KEYS[11], 'set') then redis.call('SREM', KEYS[11], id) end -- another type: cancels.lua refuses it
if payload then
  max = bn_materialize(KEYS[1], KEYS[8], id, payload)
elseif not exists then
  return 3
end
redis.call('HSET', KEYS[1], 'st', started)
if member then
  local flow, seq = bn_member_parts(member)
  redis.call('HSET', KEYS[1], 'k', flow, 'q', seq)
end
if why then
  bn_count(KEYS[7], 'failed', 1)
  bn_series(KEYS[10], now, 'f', 1)
  bn_series(KEYS[10], now, 'd', 1)
  bn_bury(KEYS[1], KEYS[5], KEYS[7], id, now, 'dead-lettered without a retry: ' .. why .. '; the run failed with: ' .. ARGV[4])
  redis.call('SET', KEYS[6], ARGV[7], 'PX', ttl)
  bn_ended(KEYS[12], KEYS[7], ARGV[7])
  redis.call('PUBLISH', ARGV[9], ARGV[7])
  if frees then redis.call('DEL', KEYS[13]) end
  return 2
end
if final == 2 then
  redis.call('HSET', KEYS[1], 's', 'q')
  redis.call('ZADD', KEYS[4], retry_at, id)
  bn_count(KEYS[7], 'snoozed', 1)
  redis.call('PUBLISH', ARGV[11], tostring(retry_at))
  return 5
end
local outcome = bn_settle(KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[10], id, now, ARGV[4], retry_at, final, ARGV[7], ttl, ARGV[9], ARGV[11], prior, max, KEYS[12], started)
if outcome == 2 and frees then redis.call('DEL', KEYS[13]) end
return outcome
