-- shed.lua: keep a route's ended list within its cap: the oldest records
-- past it are dropped, and counted in the route's stats (history_dropped), so
-- that a history store down for long costs Redis a bounded amount of memory
-- and never a silent loss. Harmless run twice: the second run finds the list
-- within the cap.
--
-- KEYS[1]  LIST  route:{r}:ended
-- KEYS[2]  HASH  route:{r}:stats
-- ARGV[1]  the cap (>= 1)
-- Returns: the number of records dropped.
local cap = bn_num(ARGV[1], 'cap')
if cap < 1 then error('bananas: the cap must be >= 1') end
if not bn_type(KEYS[1], 'list') then return 0 end -- none, or garbage that stored.lua names
local over = redis.call('LLEN', KEYS[1]) - cap
if over <= 0 then return 0 end
redis.call('LTRIM', KEYS[1], over, -1)
bn_count(KEYS[2], 'history_dropped', over)
return over
