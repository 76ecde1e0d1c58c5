-- purge.lua: delete dead-lettered jobs that died at or before a cutoff (the
-- retention sweep passes now - 7 days; `dlq purge` passes a far-future time). The caller read
-- the ids first; an id is only deleted if it is still dead and old enough. What
-- a job key held when it was set aside as garbage (see reap.lua) goes with it.
-- A job key of any type is deleted. Given a task name, only jobs of that task
-- (field n of their hash) go; an entry whose job key is not a hash, or is
-- gone, has no task to match and stays. Run twice, the second call finds the
-- ids gone and writes nothing.
--
-- KEYS[1]  ZSET  route:{r}:dead
-- KEYS[2+3i]  HASH    route:{r}:job:<id_i>, i = 0 .. number of ids - 1
-- KEYS[3+3i]  STRING  route:{r}:result:<id_i>
-- KEYS[4+3i]  any     route:{r}:garbage:<id_i>
-- ARGV[1]  cutoff (unix ms; `dlq purge` passes a far-future time)
-- ARGV[2]  task name to purge only jobs of ("" = any)
-- ARGV[3..]  the ids, matching the key triples
-- Returns: a pair {deleted, skipped}: the jobs deleted, and those left because
--          they are of another task.
local cutoff = bn_num(ARGV[1], 'cutoff')
local task = ARGV[2]
if task == nil or #KEYS ~= 1 + 3 * (#ARGV - 2) then error('bananas: purge needs a task and three keys per id') end
bn_need_type(KEYS[1], 'zset', 'dead-letter set')
local gone, skipped = 0, 0
for i = 3, #ARGV do
  local id = ARGV[i]
  local job = KEYS[3 * i - 7]
  local died = redis.call('ZSCORE', KEYS[1], id)
  if died and tonumber(died) <= cutoff then
    if task ~= '' and (bn_typeof(job) ~= 'hash' or redis.call('HGET', job, 'n') ~= task) then
      skipped = skipped + 1
    else
      redis.call('ZREM', KEYS[1], id)
      redis.call('DEL', job, KEYS[3 * i - 6], KEYS[3 * i - 5])
      gone = gone + 1
    end
  end
end
return {gone, skipped}
