-- requeue.lua: hand a dispatched job back at graceful shutdown, without counting
-- an attempt: it returns to the FRONT of its ready list so it runs next. Fenced.
--
-- A job whose priority (p) is missing or garbage, or whose job key is not a
-- hash (and no payload stands for it), has no list to go back to: the script
-- raises, naming what is wrong, before any write, and the job stays leased;
-- the reaper recovers it when its lease expires (sets a job key that is not a
-- hash aside, and a retry with a garbage priority is dead-lettered by
-- promote). A light job goes back by its payload's priority, or to the normal
-- list when that does not read, where the next fetch reports it. Run twice,
-- the second call finds the lease gone and writes nothing (returns 0).
--
-- A job with a cancel request (asked while it ran; the worker shut down
-- before acting on it) is not handed back: it ends canceled, as
-- canceled.lua ends it, with the caller's canceled record stored and
-- announced, what the job was dropped and its request removed.
--
-- KEYS[1]  HASH  route:{r}:job:<id>
-- KEYS[2]  ZSET  route:{r}:active
-- KEYS[3]  HASH  route:{r}:leases
-- KEYS[4]  LIST  route:{r}:queue:high
-- KEYS[5]  LIST  route:{r}:queue:normal
-- KEYS[6]  LIST  route:{r}:queue:low
-- KEYS[7]  HASH  route:{r}:payloads
-- KEYS[8]  HASH  route:{r}:groups
-- KEYS[9]  SET     route:{r}:cancels
-- KEYS[10] STRING  route:{r}:result:<id>
-- KEYS[11] HASH    route:{r}:stats
-- KEYS[12] HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[13] ZSET    route:{r}:idle   waiting workers: one is woken (bn_wake)
-- KEYS[14] LIST    route:{r}:ended (task history), or the stats key again when the caller keeps none
-- KEYS[15] STRING  route:{r}:unique:<u>, the unique key the job holds, or the job key
--                  again when it holds none: ended canceled, the job frees a key held
--                  until started or ended (see _unique.lua); handed back, it keeps it
-- KEYS[16..27]  the route's flow keys (Keys.FlowKeys): a keyed job goes back
--          to its place in its flow (bn_flow_back), its slot freed
-- ARGV[1]  id
-- ARGV[2]  fencing token of the dispatch
-- ARGV[3]  the route's wake channel, for workers that take only some tasks
-- ARGV[4]  the job's canceled record (opaque bytes), stored if it has a cancel request
-- ARGV[5]  its ttl ms (> 0)
-- ARGV[6]  result channel
-- ARGV[7]  now (unix ms): the minute the stats series counts a cancel in
-- Returns: 1 handed back, 0 stale token (nothing written), 3 the job is gone
-- (lease released), 6 ended canceled.
local id = bn_str(ARGV[1], 'job id')
local token = bn_str(ARGV[2], 'token')
bn_str(ARGV[3], 'wake channel')
bn_str(ARGV[4], 'canceled record')
if bn_num(ARGV[5], 'canceled record ttl') <= 0 then error('bananas: canceled record ttl must be > 0') end
bn_str(ARGV[6], 'result channel')
local now = bn_num(ARGV[7], 'now')
if redis.call('HGET', KEYS[3], id) ~= token then return 0 end
bn_need_type(KEYS[2], 'zset', 'active set')
bn_need_type(KEYS[7], 'hash', 'payloads hash')
bn_need_type(KEYS[8], 'hash', 'groups hash')
bn_need_type(KEYS[9], 'set', 'cancels set')
for k = 4, 6 do bn_need_type(KEYS[k], 'list', 'ready list') end
local frees = bn_unique_ends(KEYS[1], KEYS[15], id, 'canceled', KEYS[7])

local F = bn_flowkeys()
bn_flow_repair(F)
if redis.call('SISMEMBER', KEYS[9], id) == 1 then
  redis.call('HDEL', KEYS[3], id)
  bn_release(KEYS[2], KEYS[8], token, 1)
  local _, freed_held = bn_flow_release(F, id, now, false)
  bn_flow_wake(F, 1, now, freed_held)
  bn_end_canceled(KEYS[10], ARGV[4], ARGV[5], ARGV[6], KEYS[9], id, KEYS[11], KEYS[12], KEYS[14], now, KEYS[1], KEYS[7])
  if frees then redis.call('DEL', KEYS[15]) end
  return 6
end
local kind = bn_typeof(KEYS[1])
local prio
if kind == 'hash' then
  prio = redis.call('HGET', KEYS[1], 'p')
  local why = bn_bad_prio(prio)
  if why then error('bananas: job ' .. id .. ': ' .. why .. '; the job stays leased for the reaper') end
else
  local payload = redis.call('HGET', KEYS[7], id)
  if payload then
    local _, p = bn_split(payload)
    prio = bn_prios[p] and p or 'normal'
  elseif kind ~= 'none' then
    error('bananas: job key ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a job hash; the job stays leased for the reaper')
  end
end

redis.call('HDEL', KEYS[3], id)
bn_release(KEYS[2], KEYS[8], token, 1)
if not prio then
  local _, freed_held = bn_flow_release(F, id, now, false)
  bn_flow_wake(F, 1, now, freed_held)
  return 3
end
if bn_flow_back(F, bn_prios[prio], id, now) then return 1 end
bn_wake(KEYS[13], 1, now)
if bn_push(KEYS[3 + bn_prios[prio]], id, true) then
  redis.call('PUBLISH', ARGV[3], '1')
end
return 1
