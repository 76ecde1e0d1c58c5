-- relock.lua: extend a distributed lock (scheduler.Lock) only if it still
-- holds the caller's token. Run twice, the second call sets the same expiry
-- again.
--
-- KEYS[1]  STRING  the lock key
-- ARGV[1]  the holder's token
-- ARGV[2]  ttl ms (> 0)
-- Returns: 1 extended, 0 not held.
local token = bn_str(ARGV[1], 'lock token')
local ttl = bn_num(ARGV[2], 'lock ttl')
if ttl <= 0 then error('bananas: lock ttl must be a positive number of ms') end
if redis.call('GET', KEYS[1]) == token then
  return redis.call('PEXPIRE', KEYS[1], ttl)
end
return 0
