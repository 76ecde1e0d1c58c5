-- ack.lua: complete jobs of one route successfully: store each one's result
-- record under its result key with the result TTL and announce it, release its
-- lease, and drop what the job was (a light job's payload, or its hash): a
-- finished job is its result record. Several acks travel in one call when
-- workers finish together. Fenced: an ack whose token is no longer the job's
-- (its lease was reaped or handed back) changes nothing.
--
-- KEYS[1]  ZSET  route:{r}:active
-- KEYS[2]  HASH  route:{r}:leases
-- KEYS[3]  HASH  route:{r}:stats
-- KEYS[4]  HASH  route:{r}:payloads
-- KEYS[5+2i]  HASH    route:{r}:job:<id_i>
-- KEYS[6+2i]  STRING  route:{r}:result:<id_i>
-- ARGV[1+5i .. 5+5i] per job: id, fencing token, result record (opaque bytes, also
--          the pub/sub payload), result ttl ms (> 0), result channel
-- Returns: an array with, per job, 1 completed or 0 stale token or job gone (nothing written).
local n = (#KEYS - 4) / 2
if n < 1 or n ~= math.floor(n) or #ARGV ~= 5 * n then
  error('bananas: ack needs two keys and five args per job')
end
local ids = {}
for i = 0, n - 1 do
  local a = 1 + 5 * i
  ids[i + 1] = bn_str(ARGV[a], 'job id')
  bn_str(ARGV[a + 1], 'token')
  if bn_num(ARGV[a + 3], 'result ttl') <= 0 then error('bananas: result ttl must be > 0') end
  bn_str(ARGV[a + 4], 'result channel')
end

-- The tokens and payloads of all the jobs in one read each; then, per job, the
-- result; then the releases in one call each.
local tokens, pays = {}, {}
for first = 1, n, 200 do
  local last = math.min(first + 199, n)
  local got = redis.call('HMGET', KEYS[2], unpack(ids, first, last))
  local pay = redis.call('HMGET', KEYS[4], unpack(ids, first, last))
  for j = 1, #got do
    tokens[first + j - 1] = got[j]
    pays[first + j - 1] = pay[j]
  end
end

local out, done, light, heavy = {}, {}, {}, {}
for i = 0, n - 1 do
  local a = 1 + 5 * i
  local id, job = ids[i + 1], KEYS[5 + 2 * i]
  out[i + 1] = 0
  if tokens[i + 1] == ARGV[a + 1] then
    local ok = true
    if pays[i + 1] then
      light[#light + 1] = id
    elseif redis.call('EXISTS', job) == 1 then
      heavy[#heavy + 1] = job
    else
      ok = false
    end
    if ok then
      redis.call('SET', KEYS[6 + 2 * i], ARGV[a + 2], 'PX', ARGV[a + 3])
      redis.call('PUBLISH', ARGV[a + 4], ARGV[a + 2])
      done[#done + 1] = id
      out[i + 1] = 1
    end
  end
end
if #done > 0 then
  bn_sliced('ZREM', KEYS[1], done)
  bn_sliced('HDEL', KEYS[2], done)
  redis.call('HINCRBY', KEYS[3], 'processed', #done)
end
if #light > 0 then bn_sliced('HDEL', KEYS[4], light) end
for first = 1, #heavy, 200 do
  redis.call('DEL', unpack(heavy, first, math.min(first + 199, #heavy)))
end
return out
