-- keep.lua: take or hold a route's keeper lock (scheduler.Keeper): the one
-- process that does the route's time-driven work — promoting due jobs,
-- reaping expired leases, purging old dead-lettered jobs — while the others
-- that serve the route stand by. The caller takes the lock when it is free
-- (or past its time) and extends it when it already holds it; otherwise it
-- learns how long the holder's lock has left, and tries again then.
--
-- Harmless twice: a second run by the holder sets the same expiry again; a
-- second run by another finds the lock held and writes nothing. The lock
-- only saves work: two keepers at once (a holder paused past its time) do
-- the same idempotent passes twice.
--
-- A lock key of another type, or one without an expiry (garbage: nobody
-- would ever take it again), is replaced.
--
-- KEYS[1]  STRING  route:{r}:keeper   the holder's token, with its ttl
-- ARGV[1]  the caller's token
-- ARGV[2]  ttl ms (> 0)
-- Returns: {1, ttl} the caller holds the lock for ttl ms, or {0, left}
--          another holds it for left ms more.
local token = bn_str(ARGV[1], 'keeper token')
local ttl = bn_num(ARGV[2], 'keeper ttl')
if ttl <= 0 then error('bananas: keeper ttl must be a positive number of ms') end
local holder = false
if bn_type(KEYS[1], 'string') then holder = redis.call('GET', KEYS[1]) end
if holder and holder ~= token then
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 then return {0, left} end
end
redis.call('SET', KEYS[1], token, 'PX', ttl)
return {1, ttl}
