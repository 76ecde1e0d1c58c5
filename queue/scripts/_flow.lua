-- _flow.lua, a shared file (a script is loaded with the shared definitions it
-- names, see queue/scripts.go): the flow control shared by the scripts that
-- make keyed jobs wait, start them and end them (see queue/flow.go for the model).
--
-- A flow is the jobs of one task and one key: its name is "task|key" (task
-- names never hold '|'). Its waiting jobs are members of the route's keyed
-- set of their priority (all scores 0, ordered by member):
--   4-digit length of the flow, the flow, 15-digit order of arrival, the id
-- so that a flow's jobs are one range of the set, oldest first. flowof maps
-- the id of every keyed job waiting or running to its member.
--
-- A flow that has jobs waiting at a priority is in that priority's ring, a
-- zset of flows scored by their turn, served round-robin by fetch.lua (a
-- zset, so that a flow is in a ring once however often it is pushed, and
-- one look says whether it is there), unless a limit holds it back: at its
-- cap it is parked (its state says at which priorities) until the release
-- of one of its slots puts it back — every script that ends a lease does,
-- the reaper's included, and sweep.lua repairs a flow whose slots' leases
-- are gone without one; out of rate it waits in the held set (score: when
-- its next start is allowed). A flow's state in the flows hash is
-- "tat park id1 id2 ..." (see bn_flow_parse): its rate, where it is parked,
-- its running jobs. Garbage never strands a flow: bn_flow_rering puts back
-- in its ring every flow with jobs waiting that is in none of these places.
--
-- Every flow script is given the route's flow keys as the last 12 of its
-- KEYS (Keys.FlowKeys), read with bn_flowkeys.

local bn_prio_names = {'high', 'normal', 'low'}

local function bn_flowkeys()
  local at = #KEYS - 11
  return {keyed = {KEYS[at], KEYS[at + 1], KEYS[at + 2]}, ring = {KEYS[at + 3], KEYS[at + 4], KEYS[at + 5]},
    flows = KEYS[at + 6], held = KEYS[at + 7], flowof = KEYS[at + 8], limits = KEYS[at + 9],
    idle = KEYS[at + 10], stats = KEYS[at + 11], first = at}
end

-- bn_len4 writes a flow's length as the 4 digits that start its members,
-- each length formatted once per script call.
local bn_len4_of = {}
local function bn_len4(n)
  local v = bn_len4_of[n]
  if not v then
    v = string.format('%04d', n)
    bn_len4_of[n] = v
  end
  return v
end

local function bn_member(flow, seq, id)
  return bn_len4(#flow) .. flow .. string.format('%015.0f', seq) .. id
end

-- bn_member_parts returns a member's flow, order and id; nil for garbage.
-- Plain string cuts: it runs for every keyed job started and ended.
local function bn_member_parts(m)
  local n = tonumber(string.sub(m, 1, 4))
  if not n or n < 0 or #m < 20 + n then return nil end
  return string.sub(m, 5, 4 + n), string.sub(m, 5 + n, 19 + n), string.sub(m, 20 + n)
end

-- bn_member_flow returns a member's flow only, and bn_member_id its id
-- only: nil for garbage.
local function bn_member_flow(m)
  local n = tonumber(string.sub(m, 1, 4))
  if not n or n < 0 or #m < 20 + n then return nil end
  return string.sub(m, 5, 4 + n)
end

local function bn_member_id(m)
  local n = tonumber(string.sub(m, 1, 4))
  if not n or n < 0 or #m < 20 + n then return nil end
  return string.sub(m, 20 + n)
end

-- bn_task_of returns the task of a flow ("task|key").
local function bn_task_of(flow)
  local bar = string.find(flow, '|', 1, true)
  return bar and string.sub(flow, 1, bar - 1) or ''
end

-- bn_flow_head returns up to n members of flow waiting at priority index i,
-- oldest first.
local function bn_flow_head(F, i, flow, n)
  local p = bn_len4(#flow) .. flow
  return redis.call('ZRANGEBYLEX', F.keyed[i], '[' .. p, '(' .. p .. ':', 'LIMIT', 0, n)
end

-- bn_limits reads a limits value ("max rate period-ms burst"); garbage, or
-- none, reads as no limit at all: a scrambled limit must not hold a flow
-- back for ever.
local function bn_limits(v)
  local l = {cap = 0, rate = 0}
  if not v then return l end
  local c, r, per, b = string.match(v, '^(%d+) (%d+) (%d+) (%d+)$')
  if not c then return l end
  l.cap = tonumber(c)
  r, per, b = tonumber(r), tonumber(per), tonumber(b)
  if r > 0 and b > 0 and (per == 1000 or per == 60000 or per == 3600000) then
    l.rate, l.interval, l.burst = r, per / r, b
  end
  return l
end

-- bn_flow_parse reads a flow's state, "tat park id1 id2 ...": tat the
-- rate's theoretical arrival time (ms, or -), park the priorities (bits 1
-- high, 2 normal, 4 low) at which the flow waits for a slot of its cap (off
-- the ring, put back by the release of a slot), then the ids of its running
-- jobs. Garbage reads as a fresh state: no rate spent, nothing parked, no
-- slot held.
local function bn_flow_parse(v)
  local st = {holders = {}, park = 0}
  if not v then return st end
  local n = 0
  for w in string.gmatch(v, '%S+') do
    n = n + 1
    if n == 1 then
      st.tat = tonumber(w)
    elseif n == 2 then
      local m = tonumber(w)
      if m and m >= 0 and m <= 7 and m == math.floor(m) then st.park = m end
    else
      st.holders[#st.holders + 1] = w
    end
  end
  return st
end

local function bn_flow_state(F, flow)
  return bn_flow_parse(redis.call('HGET', F.flows, flow))
end

-- bn_flow_encode writes a state back, or false when there is nothing left
-- to keep (no rate spent, nothing parked, no slot held).
local function bn_flow_encode(st, now)
  if st.tat and st.tat <= now then st.tat = nil end
  if not st.tat and st.park == 0 and #st.holders == 0 then return false end
  local v = (st.tat and string.format('%.3f', st.tat) or '-') .. ' ' .. st.park
  if #st.holders > 0 then v = v .. ' ' .. table.concat(st.holders, ' ') end
  return v
end

local function bn_flow_put(F, flow, st, now)
  local v = bn_flow_encode(st, now)
  if v then redis.call('HSET', F.flows, flow, v) else redis.call('HDEL', F.flows, flow) end
end

-- bn_flow_put_many writes the states of many flows (a list of {flow, st}),
-- one HSET and one HDEL for them all.
local function bn_flow_put_many(F, states, now)
  local puts, dels = {}, {}
  for _, d in ipairs(states) do
    local v = bn_flow_encode(d[2], now)
    if v then
      puts[#puts + 1] = d[1]
      puts[#puts + 1] = v
    else
      dels[#dels + 1] = d[1]
    end
  end
  if #puts > 0 then bn_sliced('HSET', F.flows, puts) end
  if #dels > 0 then bn_sliced('HDEL', F.flows, dels) end
end

-- bn_bits: the park bit of each priority index.
local bn_bits = {1, 2, 4}

local function bn_has_bit(mask, i)
  return math.floor(mask / bn_bits[i]) % 2 == 1
end

-- bn_rate_room returns how many starts the rate allows now, and when the
-- next one is allowed when none is (GCRA: each start moves the theoretical
-- arrival time tat on by one interval, and a start is allowed while tat
-- stays within burst intervals of now). A tat too far ahead (garbage, or
-- written on a clock that stepped back) counts as a full burst spent.
local function bn_rate_room(l, tat, now)
  if l.rate == 0 then return math.huge, nil end
  local span = l.burst * l.interval
  if not tat or tat < now then tat = now end
  if tat > now + span then tat = now + span end
  local room = math.floor((now + span - tat) / l.interval + 1e-9)
  if room >= 1 then return room, nil end
  return 0, tat + l.interval - span
end

-- bn_rate_clamp brings a tat further ahead than a full burst (garbage, a
-- clock that stepped back, a rate since raised) back to a full burst spent
-- now, so that the next start is allowed one interval on, not when the old
-- tat said. Returns whether it moved the tat (the caller stores the state).
local function bn_rate_clamp(l, st, now)
  if l.rate == 0 or not st.tat then return false end
  local top = now + l.burst * l.interval
  if st.tat <= top then return false end
  st.tat = top
  return true
end

local function bn_rate_take(l, st, now, n)
  if l.rate == 0 or n == 0 then return end
  local tat = st.tat
  if not tat or tat < now then tat = now end
  if tat > now + l.burst * l.interval then tat = now + l.burst * l.interval end
  st.tat = tat + n * l.interval
end

-- bn_live_holders keeps, of a flow's holders, the jobs still leased under a
-- lease that has not run out, each once; returns also the earliest deadline
-- of those leases. A slot whose lease ran out is free (its worker is gone,
-- and the reaper hands its job back): a flow looked at when its slots fill
-- its cap counts only those still held.
local function bn_live_holders(leases, active, holders, now)
  local live, seen, soonest = {}, {}, nil
  for _, id in ipairs(holders) do
    if not seen[id] then
      seen[id] = true
      local token = redis.call('HGET', leases, id)
      local deadline = token and tonumber(redis.call('ZSCORE', active, token))
      if deadline and deadline >= now then
        live[#live + 1] = id
        if not soonest or deadline < soonest then soonest = deadline end
      end
    end
  end
  return live, soonest
end

-- bn_flow_hold puts flows in the held set, each until its time (a lower
-- time already there wins): pairs is a flat list time, flow, .... Flows
-- new to the set count as throttled, once per hold.
local function bn_flow_hold(F, pairs)
  if #pairs == 0 then return end
  local added = 0
  for first = 1, #pairs, 200 do
    added = added + redis.call('ZADD', F.held, 'LT', unpack(pairs, first, math.min(first + 199, #pairs)))
  end
  if added > 0 then bn_count(F.stats, 'throttled', added) end
end

-- bn_flow_next_seq returns the next order of arrival of the route's keyed
-- jobs (kept in the flows hash under "#seq": a flow's name always holds a
-- '|', so no flow is named so).
-- With n, it takes n orders at once and returns the first of them.
local function bn_flow_next_seq(F, n)
  n = n or 1
  local r = redis.pcall('HINCRBY', F.flows, '#seq', n)
  if type(r) == 'table' then
    redis.call('HSET', F.flows, '#seq', n)
    r = n
  end
  return r - n + 1
end

-- bn_ring_push puts flows at the tail of ring i, those already in it left
-- in their place: pushing a flow twice gives it one turn a round. A turn
-- is a number of the route's order counter (bn_flow_next_seq), which only
-- grows: one HINCRBY, where reading the ring's tail would cost the embedded
-- server a sort of the ring. Returns how many joined the ring.
local function bn_ring_push(F, i, flows)
  if #flows == 0 then return 0 end
  local turn = bn_flow_next_seq(F, #flows) - 1
  local args = {}
  for _, flow in ipairs(flows) do
    turn = turn + 1
    args[#args + 1] = string.format('%.0f', turn)
    args[#args + 1] = flow
  end
  local added = 0
  for first = 1, #args, 200 do
    added = added + redis.call('ZADD', F.ring[i], 'NX', unpack(args, first, math.min(first + 199, #args)))
  end
  return added
end

-- bn_flow_ring puts flow in the ring of each priority it has jobs waiting
-- at. Returns how many rings took it.
local function bn_flow_ring(F, flow)
  local n = 0
  for i = 1, 3 do
    if #bn_flow_head(F, i, flow, 1) > 0 then n = n + bn_ring_push(F, i, {flow}) end
  end
  return n
end

-- bn_flow_add makes a keyed job wait: its member in the keyed set of
-- priority index i, its id in flowof, and its flow in the ring when it had
-- nothing waiting there (a flow with jobs waiting is in the ring already,
-- or parked at its cap, or held by its rate: the next visit, release or due
-- time serves it). Returns 1 when the flow joined the ring (wake a worker),
-- else 0.
-- waiting, when given, remembers across the calls of one script the flows
-- known to have jobs waiting at a priority, so that a batch of one flow's
-- jobs reads the keyed set once.
local function bn_flow_add(F, i, member, id, waiting)
  local flow = bn_member_parts(member)
  local seen = waiting and waiting[i .. flow]
  local was = seen or #bn_flow_head(F, i, flow, 1) > 0
  if waiting then waiting[i .. flow] = true end
  redis.call('ZADD', F.keyed[i], 0, member)
  redis.call('HSET', F.flowof, id, member)
  if was then return 0 end
  return bn_ring_push(F, i, {flow})
end

-- bn_flow_unpark puts a flow parked at its cap back in the rings it waits
-- at. Returns whether it was parked.
local function bn_flow_unpark(F, flow, st)
  if st.park == 0 then return false end
  for i = 1, 3 do
    if bn_has_bit(st.park, i) then bn_ring_push(F, i, {flow}) end
  end
  st.park = 0
  return true
end

-- bn_flow_release frees the slot of job id, whose lease is ending (success,
-- failure, cancel, hand-back, a reaped lease): it leaves its flow's holders
-- and flowof, and a flow parked at its cap goes back to its rings.
-- keep: the job goes on waiting in its flow (hand-back, reap): its flowof
-- entry stays. Returns the job's member, or nil for a job of no flow, and
-- whether a worker should be woken.
local function bn_flow_release(F, id, now, keep)
  local member = redis.call('HGET', F.flowof, id)
  if not member then return nil, false end
  if not keep then redis.call('HDEL', F.flowof, id) end
  local flow = bn_member_parts(member)
  if not flow then return nil, false end
  local st = bn_flow_state(F, flow)
  local left = {}
  for _, h in ipairs(st.holders) do
    if h ~= id then left[#left + 1] = h end
  end
  st.holders = left
  local woke = bn_flow_unpark(F, flow, st)
  bn_flow_put(F, flow, st, now)
  return member, woke
end

-- bn_flow_in_use tells a script that ends leases whether a keyed job is in
-- flight on the route (flowof holds one: slots to free) and whether the
-- route has a limit of its own (its fetches may have stopped at it: an end
-- wakes a worker). One EXISTS answers for a route without flow control; a
-- route with limits of some of its tasks pays two more. Limits of another
-- type (garbage) read as no limit of the route's own.
local function bn_flow_in_use(F)
  local n = redis.call('EXISTS', F.flowof, F.limits)
  if n == 0 then return false, false end
  local keyed = redis.call('EXISTS', F.flowof) == 1
  return keyed, n > (keyed and 1 or 0) and redis.pcall('HEXISTS', F.limits, 'route') == 1
end

-- bn_flow_wake wakes up to n idle workers when a slot was freed on a route
-- that has a limit of its own (its fetch may have stopped at it) or of a
-- parked flow.
local function bn_flow_wake(F, n, now, unparked)
  if unparked or redis.call('HEXISTS', F.limits, 'route') == 1 then bn_wake(F.idle, n, now) end
end

-- bn_flow_back puts a keyed job whose lease ends without ending the job (a
-- hand-back, a lost lease) back in its place in its flow, at priority index
-- i: its member keeps its order of arrival, so it is its flow's next. Its
-- slot is freed and a worker woken. Returns false for a job of no flow,
-- which the caller pushes to its ready list.
local function bn_flow_back(F, i, id, now)
  local member = bn_flow_release(F, id, now, true)
  if not member then return false end
  bn_flow_add(F, i, member, id)
  bn_wake(F.idle, 1, now)
  return true
end

-- bn_flow_release_many is bn_flow_release for the jobs of a whole call
-- (ack.lua), its reads and writes one call per kind. Returns how many flows
-- it put back in their rings.
local function bn_flow_release_many(F, ids, now)
  local members = {}
  for first = 1, #ids, 200 do
    local got = redis.call('HMGET', F.flowof, unpack(ids, first, math.min(first + 199, #ids)))
    for j = 1, #got do members[first + j - 1] = got[j] end
  end
  -- freed: flow -> the one id it frees, or a set of them when several.
  local gone, freed, order = {}, {}, {}
  for j, id in ipairs(ids) do
    if members[j] then
      gone[#gone + 1] = id
      local flow = bn_member_flow(members[j])
      local was = flow and freed[flow]
      if not flow then
      elseif not was then
        freed[flow] = id
        order[#order + 1] = flow
      elseif type(was) == 'table' then
        was[id] = true
      else
        freed[flow] = {[was] = true, [id] = true}
      end
    end
  end
  if #gone == 0 then return 0 end
  bn_sliced('HDEL', F.flowof, gone)
  if #order == 0 then return 0 end
  local states = {}
  for first = 1, #order, 200 do
    local got = redis.call('HMGET', F.flows, unpack(order, first, math.min(first + 199, #order)))
    for j = 1, #got do states[first + j - 1] = got[j] end
  end
  local written, dels, rings, unparked = {}, {}, {{}, {}, {}}, 0
  for j, flow in ipairs(order) do
    local f, v = freed[flow], states[j]
    -- The common end of a job of a flow capped at one: its state is "- P id"
    -- (no rate spent, parked at P, this job its only slot), and all that
    -- is left to do is to put it back at P and drop the state: no parse.
    local p = type(f) == 'string' and v and #v == #f + 4 and string.sub(v, 5) == f and string.sub(v, 1, 2) == '- '
      and string.sub(v, 4, 4) == ' ' and tonumber(string.sub(v, 3, 3))
    if p then
      dels[#dels + 1] = flow
      for i = 1, 3 do
        if bn_has_bit(p, i) then rings[i][#rings[i] + 1] = flow end
      end
      if p ~= 0 then unparked = unparked + 1 end
    else
      if type(f) == 'string' then f = {[f] = true} end
      local st, left = bn_flow_parse(v), {}
      for _, h in ipairs(st.holders) do
        if not f[h] then left[#left + 1] = h end
      end
      st.holders = left
      if st.park ~= 0 then
        for i = 1, 3 do
          if bn_has_bit(st.park, i) then rings[i][#rings[i] + 1] = flow end
        end
        st.park = 0
        unparked = unparked + 1
      end
      written[#written + 1] = {flow, st}
    end
  end
  if #dels > 0 then bn_sliced('HDEL', F.flows, dels) end
  bn_flow_put_many(F, written, now)
  for i = 1, 3 do
    bn_ring_push(F, i, rings[i])
  end
  return unparked
end

-- bn_flow_rering puts back in its ring every flow that has jobs waiting at
-- a priority but is neither in that priority's ring, nor parked at it, nor
-- held:
-- a flow stranded by garbage (a ring, held set or flows hash of another
-- type, which bn_flow_repair drops, or a flow's state that does not read),
-- which no release, due time or new job of its key would ever put back. It
-- looks at up to n flows a call, one priority's keyed set after the other,
-- and keeps where it stopped in the flows hash under "#rering" (no flow is
-- named so): a route with a million keys costs bounded work a call. Returns
-- how many flows it put back, and whether it finished a pass over the keyed
-- sets. Harmless when run twice: a flow put back is in its ring.
local function bn_flow_rering(F, n)
  local i, from = 1, '-'
  local c = redis.call('HGET', F.flows, '#rering')
  if c and string.find(c, '^[123][%-(]') then i, from = tonumber(string.sub(c, 1, 1)), string.sub(c, 2) end
  local pushes, looked = {{}, {}, {}}, 0
  while looked < n do
    -- A page of members, which holds many flows when each has few jobs;
    -- the next page starts past the last flow seen, however many jobs it
    -- has.
    local page = redis.call('ZRANGEBYLEX', F.keyed[i], from, '+', 'LIMIT', 0, 100)
    if #page == 0 then
      if i == 3 then
        i = nil
        break
      end
      i, from = i + 1, '-'
    else
      local last
      for _, m in ipairs(page) do
        local flow = bn_member_flow(m)
        if not flow then
          from = '(' .. m
        elseif flow ~= last then
          last = flow
          looked = looked + 1
          -- The flow's members all sort below its prefix and ':' (their
          -- order is digits), and no other flow's start with its prefix.
          from = '(' .. bn_len4(#flow) .. flow .. ':'
          if not redis.call('ZSCORE', F.ring[i], flow) and not redis.call('ZSCORE', F.held, flow)
              and not bn_has_bit(bn_flow_state(F, flow).park, i) then
            pushes[i][#pushes[i] + 1] = flow
          end
          if looked >= n then break end
        end
      end
    end
  end
  local put = 0
  for j = 1, 3 do put = put + bn_ring_push(F, j, pushes[j]) end
  if i then
    redis.call('HSET', F.flows, '#rering', i .. from)
  else
    redis.call('HDEL', F.flows, '#rering')
  end
  return put, not i
end

-- bn_flow_repair drops a flow key that holds another type than its own:
-- garbage, which held nothing a flow script wrote, and which would otherwise
-- stop every fetch of the route. A keyed set of another type held no job
-- either: keyed jobs only ever go to a zset. A ring, held set or flows hash
-- dropped took with it where its flows were: a first pass of
-- bn_flow_rering puts back the first of them at once, sweep.lua the rest.
local function bn_flow_repair(F)
  local want = {[F.flows] = 'hash', [F.held] = 'zset', [F.flowof] = 'hash', [F.limits] = 'hash'}
  local lost = {[F.flows] = true, [F.held] = true}
  for i = 1, 3 do
    want[F.keyed[i]] = 'zset'
    want[F.ring[i]] = 'zset'
    lost[F.ring[i]] = true
  end
  local stranded = false
  for key, t in pairs(want) do
    if not bn_type(key, t) then
      redis.call('DEL', key)
      stranded = stranded or lost[key]
    end
  end
  if stranded then
    redis.call('HDEL', F.flows, '#rering')
    bn_flow_rering(F, 100)
  end
end

-- bn_flow_open readies the flows of a fetch (fetch.lua, batch_fetch.lua)
-- at now, before it takes any keyed job: it drops flow keys of another type
-- (bn_flow_repair), and puts flows due in the held set back in their rings
-- (their rate allows a start again). It returns the route's own limits
-- (bn_limits), which bound the whole call, and the route's flow state, with
-- whether bn_rate_clamp changed it (the caller writes it back then), the
-- call's budget (want, at most the route's free slots under its cap and the
-- starts its rate allows now; leases is the route's leases hash) and when
-- the rate allows the next start (nil: no rate, or room now).
local function bn_flow_open(F, leases, want, now)
  bn_flow_repair(F)
  local due = redis.call('ZRANGEBYSCORE', F.held, '-inf', now, 'LIMIT', 0, 100)
  for _, flow in ipairs(due) do
    redis.call('ZREM', F.held, flow)
    local st = bn_flow_state(F, flow)
    st.park = 0
    bn_flow_put(F, flow, st, now)
    bn_flow_ring(F, flow)
  end
  local rl = bn_limits(redis.call('HGET', F.limits, 'route'))
  local rst = bn_flow_state(F, '#route')
  local clamped = bn_rate_clamp(rl, rst, now)
  local budget = want
  if rl.cap > 0 then budget = math.min(budget, rl.cap - redis.call('HLEN', leases)) end
  local room, next_at = bn_rate_room(rl, rst.tat, now)
  return rl, rst, clamped, math.min(budget, room), next_at
end

-- bn_flow_route_took records what a fetch took against its route's own
-- limits: taken jobs (> 0) spend the route's rate, when it has one; a fetch
-- that took nothing because the route's cap clamped it (clamped) still
-- writes the route's state back (rst), as bn_flow_open left it.
local function bn_flow_route_took(F, rl, rst, now, taken, clamped)
  if taken > 0 then
    if rl.rate > 0 then
      bn_rate_take(rl, rst, now, taken)
      bn_flow_put(F, '#route', rst, now)
    end
  elseif clamped then
    bn_flow_put(F, '#route', rst, now)
  end
end
