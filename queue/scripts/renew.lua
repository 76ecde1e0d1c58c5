-- renew.lua: extend the leases of the jobs a worker is running on one route.
-- Leases are kept per lease group (the fetch call that leased the jobs, see
-- _prelude.lua): each group that still holds one of the given jobs gets the
-- new deadline. A job whose token no longer matches (reaped, handed back) is
-- reported lost and its entry left alone, so the worker can cancel the run —
-- that run, not another of the same job under a newer token.
--
-- KEYS[1]  ZSET  route:{r}:active   lease group token -> deadline ms
-- KEYS[2]  HASH  route:{r}:leases   id -> token
-- ARGV[1]  new lease deadline (unix ms)
-- ARGV[2..]  pairs id, token
-- Returns: the positions (1 for the first pair) of the pairs whose lease was lost.
local deadline = bn_num(ARGV[1], 'lease deadline')
if #ARGV % 2 ~= 1 then error('bananas: renew takes id, token pairs') end
for i = 2, #ARGV do bn_str(ARGV[i], 'id or token') end
local lost, groups = {}, {}
for i = 2, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', KEYS[2], id) == token and (groups[token] or redis.call('ZSCORE', KEYS[1], token)) then
    groups[token] = true
  else
    lost[#lost + 1] = i / 2
  end
end
for token in pairs(groups) do
  redis.call('ZADD', KEYS[1], 'XX', deadline, token)
end
return lost
