-- ack.lua: complete jobs of one route successfully: store each one's result
-- in its hash (field r) and announce it, release its lease, and let the hash
-- live as long as the result should. Several acks travel in one call when workers finish together.
-- Fenced: an ack whose token is no longer the job's (its lease was reaped or
-- handed back) changes nothing.
--
-- KEYS[1]  ZSET  route:{r}:active
-- KEYS[2]  HASH  route:{r}:leases
-- KEYS[3]  HASH  route:{r}:stats
-- KEYS[4+i]  HASH  route:{r}:job:<id_i>
-- ARGV[1]  now (unix ms)
-- ARGV[2+6i .. 7+6i] per job: id, fencing token, result record (opaque bytes, also
--          the pub/sub payload), result ttl ms (> 0), result channel, started-at ms
-- Returns: an array with, per job, 1 completed or 0 stale token (nothing written).
local now = bn_num(ARGV[1], 'now')
local n = #KEYS - 3
if n < 1 or #ARGV ~= 1 + 6 * n then
  error('bananas: ack needs one key and six args per job')
end
for i = 0, n - 1 do
  local a = 2 + 6 * i
  bn_str(ARGV[a], 'job id')
  bn_str(ARGV[a + 1], 'token')
  if bn_num(ARGV[a + 3], 'result ttl') <= 0 then error('bananas: result ttl must be > 0') end
  bn_str(ARGV[a + 4], 'result channel')
  bn_num(ARGV[a + 5], 'started-at')
end

-- The tokens of all the jobs in one read, then the lease releases in one call each.
local ids = {}
for i = 0, n - 1 do ids[i + 1] = ARGV[2 + 6 * i] end
local tokens = {}
for first = 1, n, 200 do
  local got = redis.call('HMGET', KEYS[2], unpack(ids, first, math.min(first + 199, n)))
  for j = 1, #got do tokens[first + j - 1] = got[j] end
end

local out, done = {}, {}
for i = 0, n - 1 do
  local a = 2 + 6 * i
  local id, job = ARGV[a], KEYS[4 + i]
  if tokens[i + 1] == ARGV[a + 1] and redis.call('EXISTS', job) == 1 then
    redis.call('HSET', job, 's', 'd', 'f', now, 'st', ARGV[a + 5], 'r', ARGV[a + 2])
    redis.call('PEXPIRE', job, ARGV[a + 3])
    redis.call('PUBLISH', ARGV[a + 4], ARGV[a + 2])
    done[#done + 1] = id
    out[i + 1] = 1
  else
    out[i + 1] = 0
  end
end
if #done > 0 then
  bn_sliced('ZREM', KEYS[1], done)
  bn_sliced('HDEL', KEYS[2], done)
  redis.call('HINCRBY', KEYS[3], 'processed', #done)
end
return out
