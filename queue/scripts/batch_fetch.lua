-- batch_fetch.lua: take up to N waiting jobs of one batch task's flows, up to
-- PER of each flow in one piece, and put them under one lease with a fresh
-- fencing token, as fetch.lua does: a worker's batch handler is then handed
-- the jobs of one key together (runtime.HandleBatch). The flows are looked
-- at in their ring's order, priorities strictly in the order given; flows of
-- other tasks are passed over and keep their turn.
--
-- A flow whose piece filled PER goes to the tail of its ring (the next
-- flow's batch is next); a flow cut short by N, with jobs still waiting,
-- keeps its turn at the head, so that the worker's next fetch goes on with
-- the same key instead of starting a batch of another. A flow at its task's
-- cap or out of rate is parked or held, as fetch.lua does, and the route's
-- own limits (cap, rate) bound the whole call: the same checks, in the
-- route's slot, as every fetch.
--
-- Idempotent per token: a second call with the same token (a client retry
-- after the reply was lost) takes nothing and returns the jobs still leased
-- under it. A paused route gives nothing, checked before any write. A worker
-- that finds nothing here fetches with fetch.lua next, which registers it as
-- a waiter; this script registers nobody.
--
-- KEYS[1]  ZSET  route:{r}:active    lease group token -> deadline ms
-- KEYS[2]  HASH  route:{r}:leases    id -> fencing token of its lease group
-- KEYS[3]  HASH  route:{r}:payloads  id -> payload of light jobs
-- KEYS[4]  HASH  route:{r}:groups    lease group token -> jobs still leased
-- KEYS[5]  STRING  route:{r}:paused  exists while the route is paused
-- KEYS[6]  ZSET  route:{r}:idle      (unused; the same KEYS as fetch.lua)
-- KEYS[7]  ZSET  route:{r}:expiry    id -> when it expires (ms), jobs with an expiry not started yet
-- KEYS[8..#KEYS-12]  LIST  route:{r}:queue:<priority> (unused but for their
--          number, one per priority digit)
-- KEYS[#KEYS-11..]  the route's flow keys (Keys.FlowKeys, see _flow.lua)
-- ARGV[1]  n, the most jobs to take (>= 1)
-- ARGV[2]  lease deadline (unix ms)
-- ARGV[3]  fencing token, unique to this call
-- ARGV[4]  per, the most jobs of one flow (>= 1): the task's batch size
-- ARGV[5]  the priority of each list, a digit each (1 high, 2 normal, 3 low)
-- ARGV[6]  now (unix ms)
-- ARGV[7]  the task's name
-- Returns: a flat array token, id1, payload1, flow1, id2, payload2, flow2, ...
--          (empty when nothing was taken or the route is paused); payload is
--          "" for a job with its own hash; an id "" marks a dropped entry,
--          its payload the reason ("expired:<id>" for a job set aside
--          expired, as fetch.lua does: it left its flow and holds no lease
--          nor slot; the caller ends it expired with expire.lua).
local want = bn_num(ARGV[1], 'count')
local deadline = bn_num(ARGV[2], 'lease deadline')
local token = bn_str(ARGV[3], 'token')
local per = bn_num(ARGV[4], 'batch size')
local now = bn_num(ARGV[6], 'now')
local task = bn_str(ARGV[7], 'task name')
if want < 1 then error('bananas: count must be >= 1') end
if per < 1 then error('bananas: batch size must be >= 1') end
local F = bn_flowkeys()
local m = F.first - 8
local prios = {}
for c in string.gmatch(ARGV[5] or '', '%d') do prios[#prios + 1] = tonumber(c) end
if m < 1 or #prios ~= m then error('bananas: batch fetch needs a priority digit per list key') end
for _, i in ipairs(prios) do
  if i < 1 or i > 3 then error('bananas: a list priority digit must be 1, 2 or 3') end
end

-- with_flows turns id, payload pairs into id, payload, flow triples, the
-- flow read from flowof (a job of no flow, or garbage, has flow "").
local function with_flows(pairs)
  if #pairs < 3 then return {} end
  local out, ids = {pairs[1]}, {}
  for j = 2, #pairs, 2 do ids[#ids + 1] = pairs[j] end
  local members = {}
  for first = 1, #ids, 200 do
    local got = redis.call('HMGET', F.flowof, unpack(ids, first, math.min(first + 199, #ids)))
    for j = 1, #got do members[first + j - 1] = got[j] end
  end
  for j, id in ipairs(ids) do
    out[#out + 1] = id
    out[#out + 1] = pairs[2 * j + 1]
    out[#out + 1] = (members[j] and bn_member_flow(members[j])) or ''
  end
  return out
end

bn_need_type(KEYS[1], 'zset', 'active set')
bn_need_type(KEYS[2], 'hash', 'leases hash')
bn_need_type(KEYS[3], 'hash', 'payloads hash')
if bn_checked('groups hash', 'hash', 'HEXISTS', KEYS[4], token) == 1 then
  if not bn_type(F.flowof, 'hash') then return {} end
  return with_flows(bn_leased_under(KEYS[2], KEYS[3], token))
end
if redis.call('EXISTS', KEYS[5]) == 1 then return {} end
local rings = {}
for idx = 1, m do rings[#rings + 1] = F.ring[prios[idx]] end
if redis.call('EXISTS', F.held, unpack(rings)) == 0 then return {} end

-- Jobs with an expiry: one found expired is set aside, not leased; one that
-- starts leaves the expiry set. A route with none pays one EXISTS.
local expiring = redis.call('EXISTS', KEYS[7]) == 1
if expiring then bn_need_type(KEYS[7], 'zset', 'expiry set') end
-- Flows due in the held set go back to their rings, as for fetch.lua; the
-- route's own limits bound the whole call.
local rl, rst, route_clamped, budget = bn_flow_open(F, KEYS[2], want, now)
local tl = bn_limits(redis.call('HGET', F.limits, 't:' .. task))

local out = {token}
local taken = 0
local leasing = {}
local holds, parks = {}, 0
local prefix = task .. '|'

-- serve takes up to k of flow's oldest jobs at priority index i under the
-- task's limits; it returns how many it took and whether the flow stays in
-- the ring (jobs still waiting, room left).
local function serve(i, flow, k)
  local st = bn_flow_state(F, flow)
  local room = math.huge
  bn_rate_clamp(tl, st, now)
  if tl.cap > 0 then
    if #st.holders >= tl.cap then st.holders = bn_live_holders(KEYS[2], KEYS[1], st.holders, now) end
    room = tl.cap - #st.holders
    if room <= 0 then
      if not bn_has_bit(st.park, i) then st.park = st.park + bn_bits[i] end
      parks = parks + 1
      bn_flow_put(F, flow, st, now)
      return 0, false
    end
  end
  local r, next_at = bn_rate_room(tl, st.tat, now)
  if r <= 0 then
    holds[#holds + 1] = next_at or deadline
    holds[#holds + 1] = flow
    bn_flow_put(F, flow, st, now)
    return 0, false
  end
  room = math.min(room, r, k)
  local heads = bn_flow_head(F, i, flow, room + 1)
  local members, ids = {}, {}
  for j = 1, math.min(room, #heads) do
    members[#members + 1] = heads[j]
    local id = bn_member_id(heads[j])
    if id and id ~= '' then ids[#ids + 1] = id end
  end
  if #members > 0 then bn_sliced('ZREM', F.keyed[i], members) end
  local got = 0
  if #ids > 0 then
    local held = redis.call('HMGET', KEYS[2], unpack(ids))
    local pays = redis.call('HMGET', KEYS[3], unpack(ids))
    for j, id in ipairs(ids) do
      local late = false
      if expiring then
        local at = redis.call('ZSCORE', KEYS[7], id)
        if at and tonumber(at) <= now then
          late = true
        elseif at then
          redis.call('ZREM', KEYS[7], id)
        end
      end
      if late then
        out[#out + 1] = ''
        out[#out + 1] = 'expired:' .. id
        out[#out + 1] = ''
      elseif held[j] then
        out[#out + 1] = ''
        out[#out + 1] = 'job ' .. id .. ' waits in ' .. F.keyed[i] .. ' but is already leased'
        out[#out + 1] = ''
      else
        got = got + 1
        leasing[#leasing + 1] = id
        leasing[#leasing + 1] = token
        out[#out + 1] = id
        out[#out + 1] = pays[j] or ''
        out[#out + 1] = flow
        if tl.cap > 0 then st.holders[#st.holders + 1] = id end
      end
    end
  end
  bn_rate_take(tl, st, now, got)
  local more = #heads > room
  if more and tl.cap > 0 and #st.holders >= tl.cap then
    if not bn_has_bit(st.park, i) then st.park = st.park + bn_bits[i] end
    more = false
  elseif more and tl.rate > 0 then
    local r2, at = bn_rate_room(tl, st.tat, now)
    if r2 <= 0 then
      holds[#holds + 1] = at or deadline
      holds[#holds + 1] = flow
      more = false
    end
  end
  bn_flow_put(F, flow, st, now)
  taken = taken + got
  return got, more
end

for idx = 1, m do
  if taken >= budget then break end
  local i = prios[idx]
  local looked, from = 0, 0
  while taken < budget and looked < 2000 do
    local page = redis.call('ZRANGE', F.ring[i], from, from + 199)
    if #page == 0 then break end
    local moved = 0
    for _, flow in ipairs(page) do
      if taken >= budget then break end
      looked = looked + 1
      if string.sub(flow, 1, #prefix) == prefix then
        local left = budget - taken
        local got, more = serve(i, flow, math.min(per, left))
        if not more then
          redis.call('ZREM', F.ring[i], flow)
          moved = moved + 1
        elseif got >= per then
          -- A full batch: the flow's next turn is at the tail.
          redis.call('ZREM', F.ring[i], flow)
          bn_ring_push(F, i, {flow})
          moved = moved + 1
        end
      end
    end
    if #page < 200 then break end
    from = from + #page - moved
  end
end

if #leasing > 0 then
  bn_sliced('HSET', KEYS[2], leasing)
  redis.call('ZADD', KEYS[1], deadline, token)
  redis.call('HSET', KEYS[4], token, taken)
end
bn_flow_route_took(F, rl, rst, now, #leasing > 0 and taken or 0, route_clamped)
bn_flow_hold(F, holds)
if parks > 0 then bn_count(F.stats, 'throttled', parks) end
if #out > 1 then return out end
return {}
