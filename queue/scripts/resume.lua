-- resume.lua: resume a paused route: its paused key goes, whatever it holds,
-- and idle workers of the route are woken on its wake channel (the payload is
-- not read, as for push.lua) so they fetch at once instead of at their next
-- poll. Run twice, the second call finds no key, writes nothing and wakes
-- nobody: the first run woke them.
--
-- KEYS[1]  STRING  route:{r}:paused
-- ARGV[1]  wake channel
-- Returns: 1 resumed, 0 was not paused (nothing written).
bn_str(ARGV[1], 'wake channel')
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[1], '1')
return 1
