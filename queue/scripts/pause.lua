-- pause.lua: pause a route: fetch.lua and claim.lua take nothing from it while
-- its paused key exists (of any type), in every process at once; enqueues go
-- on, and jobs already running finish. The key holds when the route was paused.
-- Run twice, the second call finds the key and writes nothing.
--
-- KEYS[1]  STRING  route:{r}:paused
-- ARGV[1]  now (unix ms), kept as the key's value
-- Returns: 1 paused now, 0 already paused (nothing written).
local now = bn_num(ARGV[1], 'now')
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], now)
return 1
