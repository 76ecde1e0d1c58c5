-- sweep.lua: put back in their rings the flows parked at their cap whose
-- slots are gone without a release (their jobs' leases dropped by hand, or
-- their flowof entries): a slot is held only by a job still leased under a
-- lease that has not run out. The releases of every script that ends a lease
-- unpark a flow at once; this is the repair of what they cannot see. The
-- caller read the flows from the flows hash; each is checked again here.
-- Harmless when run twice: a flow put back is no longer parked.
--
-- KEYS[1]  HASH  route:{r}:leases
-- KEYS[2]  ZSET  route:{r}:active
-- KEYS[3..14]  the route's flow keys (Keys.FlowKeys)
-- ARGV[1]  now (unix ms)
-- ARGV[2..]  flow names
-- Returns: how many flows were put back.
local now = bn_num(ARGV[1], 'now')
local F = bn_flowkeys()
bn_need_type(KEYS[1], 'hash', 'leases hash')
bn_need_type(KEYS[2], 'zset', 'active set')
bn_flow_repair(F)
local n = 0
for a = 2, #ARGV do
  local flow = ARGV[a]
  local st = bn_flow_state(F, flow)
  if st.park ~= 0 then
    local l = bn_limits(redis.call('HGET', F.limits, 't:' .. bn_task_of(flow)))
    st.holders = bn_live_holders(KEYS[1], KEYS[2], st.holders, now)
    if l.cap == 0 or #st.holders < l.cap then
      bn_flow_unpark(F, flow, st)
      n = n + 1
    end
    bn_flow_put(F, flow, st, now)
  end
end
bn_wake(F.idle, n, now)
return n
