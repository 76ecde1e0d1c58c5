-- unlock.lua: release a distributed lock (scheduler.Lock) only if it still
-- holds the caller's token, so a holder whose lock expired and was taken by
-- another can never release the other's. Run twice, the second call finds
-- the key gone (or another holder's) and answers 0 without writing.
--
-- KEYS[1]  STRING  the lock key
-- ARGV[1]  the holder's token
-- Returns: 1 released, 0 not held.
local token = bn_str(ARGV[1], 'lock token')
if redis.call('GET', KEYS[1]) == token then
  return redis.call('DEL', KEYS[1])
end
return 0
