-- requeue.lua: hand a dispatched job back at graceful shutdown, without counting
-- an attempt: it returns to the FRONT of its ready list so it runs next. Fenced.
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
local prio = redis.call('HGET', KEYS[1], 'p')
if not prio then
  local payload = redis.call('HGET', KEYS[7], id)
  if payload then
    local _, p = bn_split(payload)
    prio = bn_prios[p] and p or 'normal'
  end
end
local list = prio and KEYS[3 + bn_prio(prio, 'stored priority')]

redis.call('HDEL', KEYS[3], id)
bn_release(KEYS[2], KEYS[8], token, 1)
if not list then return 3 end
if bn_push(list, id, true) then
  redis.call('PUBLISH', ARGV[3], '1')
end
return 1
