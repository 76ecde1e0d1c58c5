-- cron_pause.lua: pause or resume a cron entry of the code (//bananas:cron).
-- A paused entry fires nothing on any scheduler: queue's cron.lua finds
-- paused=1 in the entry's state hash and returns before its compare-and-set
-- on the tick, so the entry keeps its next tick. Resumed, it fires from the
-- next tick that falls due.
--
-- Run twice: the second run sets what the first did.
--
-- KEYS[1]  HASH  route:{r}:cron:<name>   the entry's state (queue's cron.lua)
-- ARGV[1]  1 pause, 0 resume
-- ARGV[2]  now (unix ms)
-- Returns: 1.
local p = ARGV[1]
if p ~= '0' and p ~= '1' then error('bananas: paused must be 0 or 1') end
local now = bn_num(ARGV[2], 'now')
bn_need_type(KEYS[1], 'hash', 'cron entry state')
redis.call('HSET', KEYS[1], 'paused', p, 'paused_at', now)
return 1
