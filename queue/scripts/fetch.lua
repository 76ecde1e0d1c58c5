-- fetch.lua: take up to N ready jobs of one route, strictly in the order of the
-- lists given (high before normal before low), FIFO within a list, and put each
-- under a lease with a fresh fencing token. The job hashes are not touched here
-- (their keys are unknown until the ids are popped); the caller reads them next.
--
-- KEYS[1]  ZSET  route:{r}:active   id -> lease deadline ms
-- KEYS[2]  HASH  route:{r}:leases   id -> fencing token of the current dispatch
-- KEYS[3..]  LIST  route:{r}:queue:<priority>, in the order to drain them
-- ARGV[1]  n, the most jobs to take (>= 1)
-- ARGV[2]  lease deadline (unix ms)
-- ARGV[3]  token prefix, unique to this call; the i-th job's token is prefix .. i
-- Returns: a flat array id1, token1, id2, token2, ... (empty when every list is empty)
local want = bn_num(ARGV[1], 'count')
local deadline = bn_num(ARGV[2], 'lease deadline')
local prefix = bn_str(ARGV[3], 'token prefix')
if want < 1 then error('bananas: count must be >= 1') end
if #KEYS < 3 then error('bananas: fetch needs at least one list key') end

local out = {}
local taken = 0
for k = 3, #KEYS do
  if taken >= want then break end
  local ids = redis.call('LPOP', KEYS[k], want - taken)
  if ids then
    local scored, tokens = {}, {}
    for _, id in ipairs(ids) do
      taken = taken + 1
      local token = prefix .. taken
      scored[#scored + 1] = deadline
      scored[#scored + 1] = id
      tokens[#tokens + 1] = id
      tokens[#tokens + 1] = token
      out[#out + 1] = id
      out[#out + 1] = token
    end
    bn_sliced('ZADD', KEYS[1], scored)
    bn_sliced('HSET', KEYS[2], tokens)
  end
end
return out
