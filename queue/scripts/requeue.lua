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
-- KEYS[1]  HASH  route:{r}:job:<id>
-- KEYS[2]  ZSET  route:{r}:active
-- KEYS[3]  HASH  route:{r}:leases
-- KEYS[4]  LIST  route:{r}:queue:high
-- KEYS[5]  LIST  route:{r}:queue:normal
-- KEYS[6]  LIST  route:{r}:queue:low
-- KEYS[7]  HASH  route:{r}:payloads
-- KEYS[8]  HASH  route:{r}:groups
-- ARGV[1]  id
-- ARGV[2]  fencing token of the dispatch
-- ARGV[3]  wake channel
-- Returns: 1 handed back, 0 stale token (nothing written), 3 the job is gone (lease released).
local id = bn_str(ARGV[1], 'job id')
local token = bn_str(ARGV[2], 'token')
bn_str(ARGV[3], 'wake channel')
if redis.call('HGET', KEYS[3], id) ~= token then return 0 end
bn_need_type(KEYS[2], 'zset', 'active set')
bn_need_type(KEYS[8], 'hash', 'groups hash')
for k = 4, 6 do bn_need_type(KEYS[k], 'list', 'ready list') end
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
if not prio then return 3 end
if bn_push(KEYS[3 + bn_prios[prio]], id, true) then
  redis.call('PUBLISH', ARGV[3], '1')
end
return 1
