-- purge.lua: delete dead-lettered jobs that died at or before a cutoff (the
-- retention sweep passes now - 7 days; `dlq purge` passes a far-future time). The caller read
-- the ids first; an id is only deleted if it is still dead and old enough. What
-- a job key held when it was set aside as garbage (see reap.lua) goes with it.
-- A job key of any type is deleted. Run twice, the second call finds the ids
-- gone and writes nothing.
--
-- KEYS[1]  ZSET  route:{r}:dead
-- KEYS[2+3i]  HASH    route:{r}:job:<id_i>
-- KEYS[3+3i]  STRING  route:{r}:result:<id_i>
-- KEYS[4+3i]  any     route:{r}:garbage:<id_i>
-- ARGV[1]  cutoff (unix ms; `dlq purge` passes a far-future time)
-- ARGV[2..]  the ids, matching the key triples
-- Returns: the number of jobs deleted.
local cutoff = bn_num(ARGV[1], 'cutoff')
if #KEYS ~= 1 + 3 * (#ARGV - 1) then error('bananas: purge needs three keys per id') end
bn_need_type(KEYS[1], 'zset', 'dead-letter set')
local gone = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local died = redis.call('ZSCORE', KEYS[1], id)
  if died and tonumber(died) <= cutoff then
    redis.call('ZREM', KEYS[1], id)
    redis.call('DEL', KEYS[3 * i - 4], KEYS[3 * i - 3], KEYS[3 * i - 2])
    gone = gone + 1
  end
end
return gone
