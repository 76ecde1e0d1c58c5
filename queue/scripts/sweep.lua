-- sweep.lua: the repair of flows that garbage stranded, which the releases,
-- due times and new jobs of the other scripts cannot see:
--   - the flows named, parked at their cap, whose slots are gone without a
--     release (their jobs' leases dropped by hand, or their flowof entries),
--     or whose cap was raised or removed, go back in their rings: a slot is
--     held only by a job still leased under a lease that has not run out.
--     The caller read the flows from the flows hash; each is checked again
--     here.
--   - the flows named that are held by their rate go back in their rings at
--     once: their task's limits changed (Queue.SetTaskLimits), and the next
--     fetch weighs them by the limits now in force, holding them again if
--     those still do not allow a start.
--   - up to ARGV[2] flows with jobs waiting are looked at, resuming where the
--     last call stopped, and each that is in no ring, not parked and not
--     held goes back in its ring (bn_flow_rering).
-- Harmless when run twice: a flow put back is no longer parked, and in its
-- ring.
--
-- KEYS[1]  HASH  route:{r}:leases
-- KEYS[2]  ZSET  route:{r}:active
-- KEYS[3..14]  the route's flow keys (Keys.FlowKeys)
-- ARGV[1]  now (unix ms)
-- ARGV[2]  how many flows with jobs waiting to look at (>= 0)
-- ARGV[3..]  names of parked or held flows
-- Returns: {how many flows were put back, 1 when the look at the flows with
--          jobs waiting finished a pass over the route's keyed sets else 0}.
local now = bn_num(ARGV[1], 'now')
local budget = bn_num(ARGV[2], 'flows to look at')
local F = bn_flowkeys()
bn_need_type(KEYS[1], 'hash', 'leases hash')
bn_need_type(KEYS[2], 'zset', 'active set')
bn_flow_repair(F)
local n = 0
for a = 3, #ARGV do
  local flow = ARGV[a]
  local st = bn_flow_state(F, flow)
  if redis.call('ZSCORE', F.held, flow) then
    redis.call('ZREM', F.held, flow)
    st.park = 0
    bn_rate_clamp(bn_limits(redis.call('HGET', F.limits, 't:' .. bn_task_of(flow))), st, now)
    bn_flow_put(F, flow, st, now)
    if bn_flow_ring(F, flow) > 0 then n = n + 1 end
  elseif st.park ~= 0 then
    local l = bn_limits(redis.call('HGET', F.limits, 't:' .. bn_task_of(flow)))
    st.holders = bn_live_holders(KEYS[1], KEYS[2], st.holders, now)
    if l.cap == 0 or #st.holders < l.cap then
      bn_flow_unpark(F, flow, st)
      n = n + 1
    end
    bn_flow_put(F, flow, st, now)
  end
end
local done = true
if budget > 0 then
  local put
  put, done = bn_flow_rering(F, budget)
  n = n + put
end
bn_wake(F.idle, n, now)
return {n, done and 1 or 0}
