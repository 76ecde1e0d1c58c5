-- handback.lua: give back, without counting an attempt, jobs leased by a fetch
-- whose reply the worker never read (the reply was lost, or the worker could
-- not read their job hashes): each goes back to the FRONT of its ready list, in
-- the order given, so it runs next. Fenced: only jobs still leased under the
-- token move.
--
-- A job with a cancel request (asked while it was leased) is not given back:
-- it ends canceled, as canceled.lua ends it, with the caller's canceled
-- record stored and announced, what the job was dropped and its request
-- removed. The caller passes a record for each job it read a request for; a
-- job whose request came after that read stays leased, and the reaper ends
-- it canceled once its lease expires. A job that ends canceled frees the
-- unique key it holds until started or ended, as canceled.lua does, only
-- while the key's value is the job's id (bn_unique_ends).
--
-- The token is then marked used until a deadline: a late copy of the fetch
-- (a client retry, or the lost command itself arriving late) finds the token
-- used and takes nothing (see fetch.lua), instead of leasing jobs to nobody.
-- The marker is an empty lease group, which the reaper drops once expired.
-- Run twice, the second call finds no job leased under the token and writes
-- nothing. A job that is no longer leased but whose result is the very
-- record the caller passes for it was ended canceled by an earlier run whose
-- reply was lost: it is reported again (the caller tells its end then), and
-- nothing is written for it.
--
-- KEYS[1]  ZSET  route:{r}:active
-- KEYS[2]  HASH  route:{r}:leases
-- KEYS[3]  HASH  route:{r}:payloads
-- KEYS[4]  HASH  route:{r}:groups
-- KEYS[5]  LIST  route:{r}:queue:high
-- KEYS[6]  LIST  route:{r}:queue:normal
-- KEYS[7]  LIST  route:{r}:queue:low
-- KEYS[8]  SET   route:{r}:cancels
-- KEYS[9]  HASH  route:{r}:stats
-- KEYS[10] HASH  route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[8+3i]   HASH    route:{r}:job:<id_i>, one per id (i from 1)
-- KEYS[9+3i]   STRING  route:{r}:result:<id_i>
-- KEYS[10+3i]  STRING  route:{r}:unique:<u>, the unique key job i holds (its hash's field u,
--               read with its cancel request), or its job key again when it holds none or
--               the caller read no request for it
-- KEYS[11+3n]   ZSET    route:{r}:idle   waiting workers: one is woken per job handed back (bn_wake)
-- KEYS[12+3n]   LIST    route:{r}:ended (task history), or the stats key again when the caller keeps none
-- KEYS[13+3n..24+3n]  the route's flow keys (Keys.FlowKeys): a keyed job goes
--          back to its place in its flow (bn_flow_back), its slot freed
-- ARGV[1]  fencing token of the fetch
-- ARGV[2]  marker deadline (unix ms): until when a late copy must find the token used
-- ARGV[3]  the route's wake channel, for workers that take only some tasks
-- ARGV[4]  result channel prefix (the channel is prefix .. id .. "}")
-- ARGV[5]  now (unix ms): the minute the stats series counts a cancel in
-- ARGV[3+3i .. 5+3i] per id: the id, its canceled record ("" when the
--          caller read no cancel request for it), that record's ttl ms
-- Returns: a pair {handed back, ended canceled}: the number of jobs handed
--          back, and the ids of those that ended canceled instead (by this
--          run, or by an earlier one whose reply was lost).
local token = bn_str(ARGV[1], 'token')
local marker = bn_num(ARGV[2], 'marker deadline')
bn_str(ARGV[3], 'wake channel')
local prefix = bn_str(ARGV[4], 'result channel prefix')
local now = bn_num(ARGV[5], 'now')
local n = (#ARGV - 5) / 3
if n ~= math.floor(n) or #KEYS ~= 24 + 3 * n then error('bananas: handback needs 3 keys and 3 args per job, the idle set, the ended list and the flow keys') end
for i = 1, n do
  if bn_num(ARGV[5 + 3 * i], 'canceled record ttl') <= 0 then error('bananas: canceled record ttl must be > 0') end
end
bn_need_type(KEYS[1], 'zset', 'active set')
bn_need_type(KEYS[2], 'hash', 'leases hash')
bn_need_type(KEYS[3], 'hash', 'payloads hash')
bn_need_type(KEYS[4], 'hash', 'groups hash')
for k = 5, 7 do bn_need_type(KEYS[k], 'list', 'ready list') end
bn_need_type(KEYS[8], 'set', 'cancels set')

-- Read and decide everything first.
local back, gone, canceled, earlier = {}, {}, {}, {}
for i = 1, n do
  local id, record = ARGV[3 + 3 * i], ARGV[4 + 3 * i]
  local job, result, ukey = KEYS[8 + 3 * i], KEYS[9 + 3 * i], KEYS[10 + 3 * i]
  if id ~= '' and redis.call('HGET', KEYS[2], id) == token then
    local prio
    local payload = redis.call('HGET', KEYS[3], id)
    local asked = redis.call('SISMEMBER', KEYS[8], id) == 1
    if payload then
      local _, p = bn_split(payload)
      prio = p
    elseif bn_type(job, 'hash') then
      prio = redis.call('HGET', job, 'p')
    else
      prio = 'normal' -- a job key of another type: the next fetch reports it
    end
    if not payload and redis.call('EXISTS', job) == 0 then
      gone[#gone + 1] = id -- finished meanwhile: only its lease is left
    elseif asked and record ~= '' then
      local frees = bn_unique_ends(job, ukey, id, 'canceled', KEYS[3]) and ukey
      canceled[#canceled + 1] = { id, job, result, record, ARGV[5 + 3 * i], frees }
    elseif not asked then
      back[#back + 1] = { id, KEYS[4 + (bn_prios[prio] or 2)], bn_prios[prio] or 2 }
    end -- asked after the caller's read: left leased, for the reaper
  elseif id ~= '' and record ~= '' and bn_type(result, 'string') and redis.call('GET', result) == record then
    earlier[#earlier + 1] = id
  end
end

local released = #back + #gone + #canceled
local F = bn_flowkeys()
if released > 0 then bn_flow_repair(F) end
for i = #back, 1, -1 do
  redis.call('HDEL', KEYS[2], back[i][1])
  if not bn_flow_back(F, back[i][3], back[i][1], now) then redis.call('LPUSH', back[i][2], back[i][1]) end
end
for _, id in ipairs(gone) do
  redis.call('HDEL', KEYS[2], id)
  local _, freed_held = bn_flow_release(F, id, now, false)
  bn_flow_wake(F, 1, now, freed_held)
end
for _, c in ipairs(canceled) do
  local id = c[1]
  redis.call('HDEL', KEYS[2], id)
  local _, freed_held = bn_flow_release(F, id, now, false)
  bn_flow_wake(F, 1, now, freed_held)
  bn_end_canceled(c[3], c[4], c[5], prefix .. id .. '}', KEYS[8], id, KEYS[9], KEYS[10], KEYS[12 + 3 * n], now, c[2], KEYS[3])
  if c[6] then redis.call('DEL', c[6]) end
end
local left = 0
if released > 0 then
  left = redis.pcall('HINCRBY', KEYS[4], token, -released)
  if type(left) == 'table' then -- a garbage count: as bn_release
    redis.call('HSET', KEYS[4], token, 1000000000)
    left = 1
  end
elseif redis.call('HEXISTS', KEYS[4], token) == 1 then
  left = 1 -- jobs of the group are still running elsewhere in this worker
end
if left <= 0 then
  redis.call('HSET', KEYS[4], token, 0)
  redis.call('ZADD', KEYS[1], marker, token)
end
if #back > 0 then
  bn_wake(KEYS[11 + 3 * n], #back, now)
  redis.call('PUBLISH', ARGV[3], '1')
end
local ended = earlier
for _, c in ipairs(canceled) do ended[#ended + 1] = c[1] end
return {#back, ended}
