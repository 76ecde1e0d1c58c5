-- replay.lua: take a job out of the dead-letter set and make it ready again with
-- its attempts reset and its failure record removed.
--
-- KEYS[1]  HASH    route:{r}:job:<id>
-- KEYS[2]  ZSET    route:{r}:dead
-- KEYS[3]  LIST    route:{r}:queue:high
-- KEYS[4]  LIST    route:{r}:queue:normal
-- KEYS[5]  LIST    route:{r}:queue:low
-- KEYS[6]  STRING  route:{r}:result:<id>
-- KEYS[7]  HASH    route:{r}:stats
-- ARGV[1]  id
-- ARGV[2]  wake channel
-- Returns: 1 replayed, 0 the job is not in the dead-letter set.
local id = bn_str(ARGV[1], 'job id')
bn_str(ARGV[2], 'wake channel')
if not redis.call('ZSCORE', KEYS[2], id) then return 0 end
local prio = redis.call('HGET', KEYS[1], 'p')
if not prio then return 0 end
local list = KEYS[2 + bn_prio(prio, 'stored priority')]

redis.call('ZREM', KEYS[2], id)
redis.call('DEL', KEYS[6])
redis.call('HSET', KEYS[1], 'a', 0, 's', 'q')
redis.call('HDEL', KEYS[1], 'err', 'f', 'st', 'r')
bn_count(KEYS[7], 'replayed', 1)
if bn_push(list, id, false) then redis.call('PUBLISH', ARGV[2], '1') end
return 1
