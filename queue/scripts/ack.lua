-- ack.lua: complete a job successfully: store and announce its result, release
-- its lease, and let the job hash live as long as the result. Fenced: a worker
-- whose lease was lost (reaped, handed back) holds a stale token and changes nothing.
--
-- KEYS[1]  HASH    route:{r}:job:<id>
-- KEYS[2]  ZSET    route:{r}:active
-- KEYS[3]  HASH    route:{r}:leases
-- KEYS[4]  STRING  route:{r}:result:<id>
-- KEYS[5]  HASH    route:{r}:stats
-- ARGV[1]  id
-- ARGV[2]  fencing token of the dispatch
-- ARGV[3]  now (unix ms)
-- ARGV[4]  result record (opaque bytes, also the pub/sub payload)
-- ARGV[5]  result ttl ms (> 0)
-- ARGV[6]  result channel
-- ARGV[7]  started-at of the run (unix ms)
-- Returns: 1 when the job was completed, 0 when the token is stale (nothing written).
local id = bn_str(ARGV[1], 'job id')
local token = bn_str(ARGV[2], 'token')
local now = bn_num(ARGV[3], 'now')
local ttl = bn_num(ARGV[5], 'result ttl')
bn_str(ARGV[6], 'result channel')
local started = bn_num(ARGV[7], 'started-at')
if ttl <= 0 then error('bananas: result ttl must be > 0') end
if redis.call('HGET', KEYS[3], id) ~= token or redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end

redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[3], id)
redis.call('HSET', KEYS[1], 's', 'd', 'f', now, 'st', started)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('SET', KEYS[4], ARGV[4], 'PX', ttl)
redis.call('HINCRBY', KEYS[5], 'processed', 1)
redis.call('PUBLISH', ARGV[6], ARGV[4])
return 1
