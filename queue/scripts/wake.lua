-- wake.lua: wake up to n waiting workers of a route (bn_wake), for a worker
-- that was woken but cannot take the job: it holds no free slot (it waited
-- on several routes and another filled it). The wake-up goes on to another
-- waiting worker instead of sitting with a busy one.
--
-- Harmless twice: a second run wakes one more worker, whose fetch finds
-- nothing and registers it again.
--
-- KEYS[1]  ZSET  route:{r}:idle
-- ARGV[1]  n, the most workers to wake (>= 1)
-- ARGV[2]  now (unix ms): entries past their time are not woken
-- Publishes 'handed-on' (a push publishes '1'; workers read neither).
-- Returns: how many workers were woken.
local n = bn_num(ARGV[1], 'count')
local now = bn_num(ARGV[2], 'now')
if n < 1 then error('bananas: count must be >= 1') end
return bn_wake(KEYS[1], n, now, 'handed-on')
