-- resume.lua: resume a paused route: its paused key goes, whatever it holds,
-- and every waiting worker of the route is woken — those of the idle set on
-- their own channels, those that take only some tasks on the route's — so
-- they fetch at once instead of at their next poll. Run twice, the second call finds no key, writes nothing and wakes
-- nobody: the first run woke them.
--
-- KEYS[1]  STRING  route:{r}:paused
-- KEYS[2]  ZSET    route:{r}:idle
-- ARGV[1]  the route's wake channel
-- ARGV[2]  now (unix ms): entries of the idle set past their time are not woken
-- Returns: 1 resumed, 0 was not paused (nothing written).
bn_str(ARGV[1], 'wake channel')
local now = bn_num(ARGV[2], 'now')
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
local waiting = redis.pcall('ZCARD', KEYS[2])
if type(waiting) == 'number' then bn_wake(KEYS[2], waiting, now) end
redis.call('PUBLISH', ARGV[1], '1')
return 1
