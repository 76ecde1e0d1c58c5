-- prune.lua: say whether a route holds nothing, read in one atomic step on
-- the route's slot, for Queue.PruneRoutes. It writes nothing: the routes set
-- lives on another slot (a cluster), so the caller removes the route from it
-- after this check and checks again after the removal (see prune.go).
--
-- KEYS[1..3]  LIST  route:{r}:queue:high, :normal, :low
-- KEYS[4]     ZSET  route:{r}:scheduled
-- KEYS[5]     HASH  route:{r}:leases
-- KEYS[6]     ZSET  route:{r}:dead
-- KEYS[7]     HASH  route:{r}:payloads
-- KEYS[8]     HASH  route:{r}:stats
-- KEYS[9]     any   route:{r}:paused
-- KEYS[10]    HASH  route:{r}:limits
-- ARGV: none
-- Returns: "" when any of KEYS[1..7] exists (a job ready, scheduled, leased,
--          dead, a light job's payload, or garbage there), when the route is
--          paused, or when it has limits of its own (the "route" field): an
--          operator's choice stays listed; else its enqueued counter ("0"
--          when none), which every enqueue changes.
if #KEYS ~= 10 then error('bananas: prune needs the route\'s 10 keys') end
-- Redis drops a list, set or hash when its last entry goes: a key that
-- exists holds something (a job, or garbage that is not ours to call empty).
for i = 1, 7 do
  if redis.call('EXISTS', KEYS[i]) == 1 then return '' end
end
if redis.call('EXISTS', KEYS[9]) == 1 then return '' end
if bn_typeof(KEYS[10]) ~= 'none' and (not bn_type(KEYS[10], 'hash') or redis.call('HEXISTS', KEYS[10], 'route') == 1) then
  return ''
end
if not bn_type(KEYS[8], 'hash') then return '' end
return redis.call('HGET', KEYS[8], 'enqueued') or '0'
