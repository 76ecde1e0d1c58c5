-- purge.lua: delete dead-lettered jobs that died at or before a cutoff (the
-- retention sweep passes now - 7 days; `dlq purge` passes a far-future time). The caller read
-- the ids first; an id is only deleted if it is still dead and old enough.
--
-- KEYS[1]  ZSET  route:{r}:dead
-- KEYS[2+2i]  HASH    route:{r}:job:<id_i>
-- KEYS[3+2i]  STRING  route:{r}:result:<id_i>
-- ARGV[1]  cutoff (unix ms; `dlq purge` passes a far-future time)
-- ARGV[2..]  the ids, matching the key pairs
-- Returns: the number of jobs deleted.
local cutoff = bn_num(ARGV[1], 'cutoff')
if #KEYS ~= 1 + 2 * (#ARGV - 1) then error('bananas: purge needs two keys per id') end
local gone = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local died = redis.call('ZSCORE', KEYS[1], id)
  if died and tonumber(died) <= cutoff then
    redis.call('ZREM', KEYS[1], id)
    redis.call('DEL', KEYS[2 * i - 2], KEYS[2 * i - 1])
    gone = gone + 1
  end
end
return gone
