-- fetch.lua: take up to N ready jobs of one route, strictly in the order of the
-- lists given (high before normal before low), FIFO within a list, and put each
-- under a lease with a fresh fencing token. A light job's payload comes back
-- with it; a job with a hash of its own (delayed, retried, replayed) comes back
-- with an empty payload and the caller reads its hash next (its key is unknown
-- until the id is popped).
--
-- Idempotent per token: a second call with the same token (a client retry
-- after the reply was lost, or a late copy of the command) takes nothing and
-- returns the jobs still leased under that token — the first call's result,
-- less what has settled since. A token is recognised only while its group
-- (or a hand-back's marker, see handback.lua) exists: not once all its jobs
-- settled, nor when its first run took nothing (docs/DESIGN-NOTES.md, "Every
-- call may run twice", says what that leaves).
--
-- A paused route (its paused key exists, of any type: see pause.lua) gives
-- nothing, checked before any write; a retry of a call that leased before the
-- pause still answers with its jobs, so they are not left leased unseen.
--
-- Flow control (see _flow.lua): within each priority the route's flows —
-- keyed jobs, grouped by task and key — are served round-robin, one job per
-- flow per turn, the ready list of unkeyed jobs taking half of the turns
-- while both have jobs. A flow at its task's cap (max running) or out of
-- rate goes to the held set, off the ring, so it holds nobody back; due
-- held flows are put back in their rings first. The route's own limits cap
-- the whole call. Every check and count is in this one script, on the
-- route's slot; a retry of the call finds its token and takes nothing.
-- When the call takes fewer than n and some flow is held, the reply ends
-- with an entry "" whose payload is "due:<ms>", the time the earliest held
-- flow is looked at again, for the worker to fetch then.
--
-- Garbage is dropped, never leased: an empty list entry, and an entry of a
-- job already leased (a duplicate id in a list, which would run the job twice).
-- Each comes back as an id "" with the reason as its payload, for the caller
-- to log.
--
-- KEYS[1]  ZSET  route:{r}:active    lease group token -> deadline ms
-- KEYS[2]  HASH  route:{r}:leases    id -> fencing token (lease group) of the current dispatch
-- KEYS[3]  HASH  route:{r}:payloads  id -> payload of light jobs
-- KEYS[4]  HASH  route:{r}:groups    lease group token -> jobs still leased
-- KEYS[5]  STRING  route:{r}:paused  exists while the route is paused
-- KEYS[6]  ZSET  route:{r}:idle      wake channel of a waiting worker -> until (ms)
-- KEYS[7]  ZSET  route:{r}:expiry    id -> when it expires (ms), jobs with an expiry not started yet
-- KEYS[8..#KEYS-12]  LIST  route:{r}:queue:<priority>, in the order to drain them
-- KEYS[#KEYS-11..]  the route's flow keys (Keys.FlowKeys, see _flow.lua)
-- ARGV[1]  n, the most jobs to take (>= 1)
-- ARGV[2]  lease deadline (unix ms)
-- ARGV[3]  fencing token, unique to this call: every job of the call gets it (a
--          dispatch is a job and the call that leased it; a job is leased again
--          only by a later call, so one token per call fences as well as one per job)
-- ARGV[4]  the calling worker's wake channel for this route, or "": when the
--          call takes fewer than n jobs (none ready, a paused route) the
--          worker waits, and is registered in the idle set until ARGV[5]
--          (unix ms), for the next job made ready to wake it alone (bn_wake)
-- ARGV[5]  until when that registration holds (unix ms; read only with ARGV[4])
-- ARGV[6]  the priority of each list, a digit each (1 high, 2 normal, 3 low)
-- ARGV[7]  now (unix ms)
-- ARGV[8..]  task names, for a worker that runs only those (Queue.FetchTypes):
--          only flows of those tasks are served, and the ready lists are left
--          to claim.lua; none: every flow and list
-- Returns: a flat array token, id1, payload1, id2, payload2, ... (empty when
--          nothing was taken or dropped, or the route is paused): the call's token once, then each
--          job's id and payload; payload is "" for a job with its own hash; an
--          id "" marks a dropped entry, its payload the reason ("expired:<id>"
--          for a job set aside expired, see below).
--
-- Expiry: a job of the expiry set whose time has passed is not leased. The
-- script takes it out (it left its list or keyed set as it was taken, and
-- its lease and slot are undone) and sets it aside, keeping its entry in
-- the expiry set; the caller ends it expired at once (expire.lua, which
-- needs the job's own keys), and the expiry sweep does when the caller
-- could not. Each job that starts leaves the expiry set. A route with no
-- job of an expiry pays nothing for this: its expiry set is in the EXISTS
-- the call makes anyway.
local want = bn_num(ARGV[1], 'count')
local deadline = bn_num(ARGV[2], 'lease deadline')
local token = bn_str(ARGV[3], 'token')
local waiter = ARGV[4] or ''
local waiter_until = 0
if waiter ~= '' then waiter_until = bn_num(ARGV[5], 'idle until') end
local now = bn_num(ARGV[7], 'now')
if want < 1 then error('bananas: count must be >= 1') end
local F = bn_flowkeys()
local only
if #ARGV > 7 then
  only = {}
  for i = 8, #ARGV do only[bn_str(ARGV[i], 'task name')] = true end
end
local m = F.first - 8
local prios = {}
for c in string.gmatch(ARGV[6] or '', '%d') do prios[#prios + 1] = tonumber(c) end
if m < 1 or #prios ~= m then error('bananas: fetch needs a priority digit per list key') end
for _, i in ipairs(prios) do
  if i < 1 or i > 3 then error('bananas: a list priority digit must be 1, 2 or 3') end
end
-- Nothing ready, no flow held, and no earlier run of this call to answer
-- for: the fetch of an idle worker (its safety poll, or a wake-up another
-- worker won) costs a few commands. Its only write is the worker's idle
-- entry, which bn_idle guards itself.
local watched = {}
for idx = 1, m do
  if not only then watched[#watched + 1] = KEYS[7 + idx] end
  watched[#watched + 1] = F.ring[prios[idx]]
end
watched[#watched + 1] = F.held
if redis.call('EXISTS', unpack(watched)) == 0 and
    not (bn_type(KEYS[4], 'hash') and redis.call('HEXISTS', KEYS[4], token) == 1) then
  if waiter ~= '' then bn_idle(KEYS[6], waiter, waiter_until) end
  return {}
end
bn_need_type(KEYS[1], 'zset', 'active set')
bn_need_type(KEYS[2], 'hash', 'leases hash')
bn_need_type(KEYS[3], 'hash', 'payloads hash')
-- The groups hash and the ready lists are checked by their first reads
-- (bn_checked), which the call makes anyway: the lists' lengths spare an
-- LPOP of each empty one.
local queued = {}
for k = 8, 7 + m do queued[KEYS[k]] = bn_checked('ready list', 'list', 'LLEN', KEYS[k]) end

if bn_checked('groups hash', 'hash', 'HEXISTS', KEYS[4], token) == 1 then
  return bn_leased_under(KEYS[2], KEYS[3], token)
end
-- One EXISTS says the route is neither paused nor under flow control (no
-- ring, held flow or limits), the common case, which then skips both. A
-- route whose only flow key is the limits of some of its tasks, none of
-- whose keyed jobs waits (no ring, none held), and which has no limit of
-- its own, skips the flow's repair and reads too, at two commands more.
-- Limits of another type (garbage) count as flow control, which
-- bn_flow_repair drops.
--
-- The expiry set rides in the same EXISTS, named seven times so that it
-- counts 7 and the six others at most 6: found >= 7 says it exists, and
-- found % 7 counts the others.
local found = redis.call('EXISTS', KEYS[5], F.ring[1], F.ring[2], F.ring[3], F.held, F.limits,
  KEYS[7], KEYS[7], KEYS[7], KEYS[7], KEYS[7], KEYS[7], KEYS[7])
local expiring = found >= 7
if expiring then
  bn_need_type(KEYS[7], 'zset', 'expiry set')
  found = found % 7
end
local flowy = false
if found == 1 and redis.call('EXISTS', F.limits) == 1 then
  flowy = redis.pcall('HEXISTS', F.limits, 'route') ~= 0
elseif found > 0 then
  if redis.call('EXISTS', KEYS[5]) == 1 then
    -- resume.lua wakes every registered worker.
    if waiter ~= '' then bn_idle(KEYS[6], waiter, waiter_until) end
    return {}
  end
  flowy = true
end
local rl, rst, route_clamped = bn_limits(nil), nil, false
local budget, route_next = want, nil
if flowy then
  -- Flows due in the held set go back to their rings; the route's own
  -- limits bound the whole call.
  rl, rst, route_clamped, budget, route_next = bn_flow_open(F, KEYS[2], want, now)
end

local out = {token}
local taken = 0
local opened = false

-- lease puts job id under this call's lease. The group enters the active
-- set with its first job, so that the slots counted later in this same call
-- (bn_live_holders) see the lease.
local leasing = {}
local function lease(id, payload)
  leasing[#leasing + 1] = id
  leasing[#leasing + 1] = token
  taken = taken + 1
  out[#out + 1] = id
  out[#out + 1] = payload or ''
end

-- flush writes the leases taken so far: before a later turn of this call
-- counts a flow's slots (bn_live_holders), which reads them. The group
-- enters the active set with its first job.
local function flush()
  if #leasing == 0 then return end
  bn_sliced('HSET', KEYS[2], leasing)
  leasing = {}
  if not opened then
    redis.call('ZADD', KEYS[1], deadline, token)
    opened = true
  end
end

local function dropped(why)
  out[#out + 1] = ''
  out[#out + 1] = why
end

local function take_list(key, n)
  if n <= 0 or queued[key] == 0 then return end
  local ids = redis.call('LPOP', key, n)
  if not ids then return end
  local seen = {}
  for first = 1, #ids, 200 do
    local last = math.min(first + 199, #ids)
    local pays = redis.call('HMGET', KEYS[3], unpack(ids, first, last))
    local held = redis.call('HMGET', KEYS[2], unpack(ids, first, last))
    for j = 1, #pays do
      local id = ids[first + j - 1]
      if id == '' then
        dropped('an empty id in ' .. key)
      elseif held[j] or seen[id] then
        dropped('job ' .. id .. ' is in ' .. key .. ' but already leased')
      else
        seen[id] = true
        lease(id, pays[j])
      end
    end
  end
  flush()
end

local limits_of = {}
local function task_limits(flow)
  local task = bn_task_of(flow)
  if not limits_of[task] then limits_of[task] = bn_limits(redis.call('HGET', F.limits, 't:' .. task)) end
  return limits_of[task]
end

-- room_of returns how many jobs a flow may start now under its task's
-- limits; when none, 'cap' or 'rate' and when to look at it again. The
-- slots are checked against their leases only when they fill the cap.
local function room_of(l, st, check)
  local n, why, again = math.huge, nil, nil
  bn_rate_clamp(l, st, now)
  if l.cap > 0 then
    if check and #st.holders >= l.cap then
      st.holders, again = bn_live_holders(KEYS[2], KEYS[1], st.holders, now)
    end
    n = l.cap - #st.holders
    if n <= 0 then why = 'cap' end
  end
  if not why then
    local r, next_at = bn_rate_room(l, st.tat, now)
    if r < n then n, again = r, next_at end
    if n <= 0 then why = 'rate' end
  end
  if why then return 0, why, again or deadline end
  return n
end

-- A turn of ring i: the flows at its head each start up to quota jobs
-- (one, when the ring holds more flows than the call wants jobs), then go
-- back to the tail while they have jobs waiting and room; a flow at its cap
-- is parked, one out of rate held until its next start is allowed. flows
-- are the ring's head, each once (a ring is a zset), and turns their
-- scores, which the flows not reached keep. Reads and writes go out in one
-- call per kind for the whole turn.
local function turn(i, flows, turns, budget)
  -- park: a flow at its cap waits off the ring, for the release of one of
  -- its slots (every script that ends a lease puts it back), counted as
  -- throttled.
  local parks = 0
  local function park(st, i)
    if not bn_has_bit(st.park, i) then st.park = st.park + bn_bits[i] end
    parks = parks + 1
  end
  local states = redis.call('HMGET', F.flows, unpack(flows))
  local quota = math.ceil(budget / #flows)
  local ids, members, back, unvisited, holds, dirty = {}, {}, {}, {}, {}, {}
  -- hold_back parks a flow at its cap, or holds it until its rate allows
  -- a start; false when it has room.
  local function hold_back(flow, st, why, again)
    if why == 'cap' then
      park(st, i)
    elseif why then
      holds[#holds + 1] = again
      holds[#holds + 1] = flow
    else
      return false
    end
    return true
  end
  -- take starts up to k of flow's oldest jobs at priority i and says
  -- whether more wait.
  local function take(flow, st, l, k)
    local heads = bn_flow_head(F, i, flow, k + 1)
    local got = 0
    for j = 1, math.min(k, #heads) do
      members[#members + 1] = heads[j]
      local id = bn_member_id(heads[j])
      if not id or id == '' then
        dropped('a keyed entry that names no job: ' .. bn_shown(heads[j]))
      else
        ids[#ids + 1] = id
        got = got + 1
        if l.cap > 0 then st.holders[#st.holders + 1] = id end
      end
    end
    bn_rate_take(l, st, now, got)
    return #heads > k
  end
  for idx, flow in ipairs(flows) do
    local left = budget - #ids
    if left <= 0 then
      unvisited[#unvisited + 1] = turns[idx]
      unvisited[#unvisited + 1] = flow
    elseif only and not only[bn_task_of(flow)] then
      back[#back + 1] = flow -- another worker's to run
    else
      local l, st = task_limits(flow), bn_flow_parse(states[idx])
      -- A flow of a task without limits keeps no state (but what a limit
      -- since removed left, which is dropped).
      if states[idx] or l.cap > 0 or l.rate > 0 then dirty[#dirty + 1] = {flow, st} end
      local r, why, again = room_of(l, st, true)
      if not hold_back(flow, st, why, again) and take(flow, st, l, math.min(r, quota, left))
          and not hold_back(flow, st, select(2, room_of(l, st, false))) then
        back[#back + 1] = flow
      end
    end
  end
  if #members > 0 then bn_sliced('ZREM', F.keyed[i], members) end
  if #ids > 0 then
    local held = redis.call('HMGET', KEYS[2], unpack(ids))
    local pays = redis.call('HMGET', KEYS[3], unpack(ids))
    for j, id in ipairs(ids) do
      if held[j] then
        dropped('job ' .. id .. ' waits in ' .. F.keyed[i] .. ' but is already leased')
      else
        lease(id, pays[j])
      end
    end
  end
  bn_flow_put_many(F, dirty, now)
  -- The flows not looked at keep their turns, ahead of the ring; those
  -- served go to its tail.
  if #unvisited > 0 then bn_sliced('ZADD', F.ring[i], unvisited) end
  bn_ring_push(F, i, back)
  bn_flow_hold(F, holds)
  if parks > 0 then bn_count(F.stats, 'throttled', parks) end
  flush()
  return #back + #unvisited / 2
end

-- take_ring takes up to n jobs from ring i, turn after turn, until the
-- ring is empty; a call looks at most at 2,000 flows (parked, held, or with
-- nothing left waiting, they leave the ring as it looks). A turn returns
-- how many of its flows stay in the ring.
local function take_ring(i, n)
  local stop, looked = taken + n, 0
  while taken < stop and looked < 2000 do
    local popped = redis.call('ZPOPMIN', F.ring[i], math.min(stop - taken, 200))
    if #popped == 0 then return end
    local flows, turns = {}, {}
    for j = 1, #popped, 2 do
      flows[#flows + 1] = popped[j]
      turns[#turns + 1] = popped[j + 1]
    end
    looked = looked + #flows
    local before = taken
    -- A turn that took nothing and left every flow in the ring (another
    -- worker's tasks) would only go round again.
    if turn(i, flows, turns, stop - taken) == #flows and taken == before then return end
  end
end

for idx = 1, m do
  local left = budget - taken
  if left <= 0 then break end
  local i, list = prios[idx], KEYS[7 + idx]
  local ring = flowy and redis.call('ZCARD', F.ring[i]) > 0
  if only then
    take_ring(i, left)
  elseif ring and queued[list] > 0 then
    -- Half the turns each; which goes first varies with the call's token,
    -- so that a worker fetching one job at a time serves both.
    if string.byte(token, #token) % 2 == 0 then
      take_ring(i, math.ceil(left / 2))
      take_list(list, budget - taken)
      take_ring(i, budget - taken)
    else
      take_list(list, math.ceil(left / 2))
      take_ring(i, budget - taken)
      take_list(list, budget - taken)
    end
  elseif ring then
    take_ring(i, left)
  else
    take_list(list, left)
  end
end
if expiring and taken > 0 then
  -- Jobs found expired are set aside (see the header), the others leave
  -- the expiry set as they start.
  local ids = {}
  for j = 2, #out, 2 do
    if out[j] ~= '' then ids[#ids + 1] = out[j] end
  end
  local late, started = {}, {}
  for first = 1, #ids, 200 do
    local last = math.min(first + 199, #ids)
    local at = redis.call('ZMSCORE', KEYS[7], unpack(ids, first, last))
    for j = 1, #at do
      local id = ids[first + j - 1]
      if at[j] and tonumber(at[j]) <= now then
        late[id] = true
      elseif at[j] then
        started[#started + 1] = id
      end
    end
  end
  if #started > 0 then bn_sliced('ZREM', KEYS[7], started) end
  if next(late) then
    local kept, aside = {token}, {}
    for j = 2, #out, 2 do
      if late[out[j]] then
        aside[#aside + 1] = out[j]
      else
        kept[#kept + 1] = out[j]
        kept[#kept + 1] = out[j + 1]
      end
    end
    bn_sliced('HDEL', KEYS[2], aside)
    for _, id in ipairs(aside) do
      -- A keyed job (taken only when flowy) frees the slot it was given.
      if flowy then bn_flow_release(F, id, now, false) end
      kept[#kept + 1] = ''
      kept[#kept + 1] = 'expired:' .. id
    end
    out, taken = kept, taken - #aside
    if taken == 0 and opened then redis.call('ZREM', KEYS[1], token) end
  end
end
if taken > 0 then
  redis.call('HSET', KEYS[4], token, taken)
end
bn_flow_route_took(F, rl, rst, now, taken, route_clamped)
if taken < want then
  if waiter ~= '' then bn_idle(KEYS[6], waiter, waiter_until) end
  local next_at = route_next
  local first = flowy and redis.call('ZRANGE', F.held, 0, 0, 'WITHSCORES') or {}
  if #first == 2 and (not next_at or tonumber(first[2]) < next_at) then next_at = tonumber(first[2]) end
  if next_at then dropped('due:' .. string.format('%.0f', math.ceil(next_at))) end
end
if #out > 1 then return out end
return {}
