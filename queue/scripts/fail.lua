-- fail.lua: end a failed run. While attempts <= max retries the job goes back to
-- the scheduled set for retry_at (the caller computed the backoff); otherwise, or
-- when the failure is final (a decode error, a payload over the limit), it is
-- dead-lettered and its failure record is stored and announced. Fenced like ack.
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
-- ARGV[1]  id
-- ARGV[2]  fencing token of the dispatch
-- ARGV[3]  now (unix ms)
-- ARGV[4]  error message
-- ARGV[5]  retry-at (unix ms)
-- ARGV[6]  1 = final, dead-letter whatever the attempts; 0 = retry while attempts allow
-- ARGV[7]  failure record to store if the job dies (opaque bytes)
-- ARGV[8]  failure result ttl ms (> 0)
-- ARGV[9]  result channel
-- ARGV[10] started-at of the run (unix ms)
-- ARGV[11] schedule channel
-- Returns: 0 stale token (nothing written), 1 scheduled for retry, 2 dead-lettered,
--          3 the job is gone (lease released, nothing else to do).
local id = bn_str(ARGV[1], 'job id')
local token = bn_str(ARGV[2], 'token')
local now = bn_num(ARGV[3], 'now')
local retry_at = bn_num(ARGV[5], 'retry-at')
local final = bn_num(ARGV[6], 'final flag')
local ttl = bn_num(ARGV[8], 'failure ttl')
bn_str(ARGV[9], 'result channel')
local started = bn_num(ARGV[10], 'started-at')
bn_str(ARGV[11], 'schedule channel')
if ttl <= 0 then error('bananas: failure ttl must be > 0') end
if redis.call('HGET', KEYS[3], id) ~= token then return 0 end
local exists = redis.call('EXISTS', KEYS[1]) == 1
local payload = not exists and redis.call('HGET', KEYS[8], id)

redis.call('HDEL', KEYS[3], id)
bn_release(KEYS[2], KEYS[9], token, 1)
if payload then
  bn_materialize(KEYS[1], KEYS[8], id, payload)
elseif not exists then
  return 3
end
redis.call('HSET', KEYS[1], 'st', started)
return bn_settle(KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[7], id, now, ARGV[4], retry_at, final, ARGV[7], ttl, ARGV[9], ARGV[11])
