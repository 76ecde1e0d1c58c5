-- fetch.lua: take up to N ready jobs of one route, strictly in the order of the
-- lists given (high before normal before low), FIFO within a list, and put each
-- under a lease with a fresh fencing token. A light job's payload comes back
-- with it; a job with a hash of its own (delayed, retried, replayed) comes back
-- with an empty payload and the caller reads its hash next (its key is unknown
-- until the id is popped).
--
-- KEYS[1]  ZSET  route:{r}:active    lease group token -> deadline ms
-- KEYS[2]  HASH  route:{r}:leases    id -> fencing token (lease group) of the current dispatch
-- KEYS[3]  HASH  route:{r}:payloads  id -> payload of light jobs
-- KEYS[4]  HASH  route:{r}:groups    lease group token -> jobs still leased
-- KEYS[5..]  LIST  route:{r}:queue:<priority>, in the order to drain them
-- ARGV[1]  n, the most jobs to take (>= 1)
-- ARGV[2]  lease deadline (unix ms)
-- ARGV[3]  fencing token, unique to this call: every job of the call gets it (a
--          dispatch is a job and the call that leased it; a job is leased again
--          only by a later call, so one token per call fences as well as one per job)
-- Returns: a flat array token, id1, payload1, id2, payload2, ... (empty when
--          every list is empty): the call's token once, then each job's id and
--          payload; payload is "" for a job with its own hash.
local want = bn_num(ARGV[1], 'count')
local deadline = bn_num(ARGV[2], 'lease deadline')
local token = bn_str(ARGV[3], 'token')
if want < 1 then error('bananas: count must be >= 1') end
if #KEYS < 5 then error('bananas: fetch needs at least one list key') end

local out = {token}
local taken = 0
for k = 5, #KEYS do
  if taken >= want then break end
  local ids = redis.call('LPOP', KEYS[k], want - taken)
  if ids then
    local tokens = {}
    for first = 1, #ids, 200 do
      local pays = redis.call('HMGET', KEYS[3], unpack(ids, first, math.min(first + 199, #ids)))
      for j = 1, #pays do
        local id = ids[first + j - 1]
        taken = taken + 1
        tokens[#tokens + 1] = id
        tokens[#tokens + 1] = token
        out[#out + 1] = id
        out[#out + 1] = pays[j] or ''
      end
    end
    bn_sliced('HSET', KEYS[2], tokens)
  end
end
if taken > 0 then
  redis.call('ZADD', KEYS[1], deadline, token)
  redis.call('HSET', KEYS[4], token, taken)
  return out
end
return {}
