-- renew.lua: extend the leases of the jobs a worker is running on one route.
-- A job whose token no longer matches (reaped, handed back) is reported lost and
-- its entry left alone, so the worker can cancel the run.
--
-- KEYS[1]  ZSET  route:{r}:active
-- KEYS[2]  HASH  route:{r}:leases
-- ARGV[1]  new lease deadline (unix ms)
-- ARGV[2..]  pairs id, token
-- Returns: the ids whose lease was lost.
local deadline = bn_num(ARGV[1], 'lease deadline')
if #ARGV % 2 ~= 1 then error('bananas: renew takes id, token pairs') end
local lost = {}
for i = 2, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', KEYS[2], id) == token and redis.call('ZSCORE', KEYS[1], id) then
    redis.call('ZADD', KEYS[1], 'XX', deadline, id)
  else
    lost[#lost + 1] = id
  end
end
return lost
