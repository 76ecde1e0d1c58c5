-- claim.lua: the fetch of a worker limited to some job types. It is given a
-- window of ids read from the head of one ready list and takes, in list order,
-- those whose task name is one of the types, up to N, each under a fresh lease.
-- An id that left the list since it was read (another worker took it) is
-- skipped, and so is one whose job cannot be read (no payload, no hash, a key
-- of another type): it is not this worker's to judge.
--
-- Idempotent per token, as fetch.lua: a second call with the same token
-- claims nothing and returns the jobs still leased under it. A paused route
-- gives nothing, as in fetch.lua, and answers {""} so that the caller stops
-- reading the list window by window.
--
-- KEYS[1]  LIST  route:{r}:queue:<priority>
-- KEYS[2]  ZSET  route:{r}:active
-- KEYS[3]  HASH  route:{r}:leases
-- KEYS[4]  HASH  route:{r}:payloads  id -> payload of light jobs
-- KEYS[5]  HASH  route:{r}:groups    lease group token -> jobs still leased (see fetch.lua)
-- KEYS[6]  STRING  route:{r}:paused  exists while the route is paused
-- KEYS[7..6+m]  HASH  route:{r}:job:<id_i>, one per id of ARGV
-- KEYS[7+m]  ZSET  route:{r}:expiry   id -> when it expires (ms): a job past it is
--          set aside, not leased, as fetch.lua does (its header says how)
-- ARGV[1]  n, the most jobs to take (>= 1)
-- ARGV[2]  lease deadline (unix ms)
-- ARGV[3]  fencing token, unique to this call (shared by its jobs, as in fetch.lua)
-- ARGV[4]  t, the number of type names that follow
-- ARGV[5..4+t]  type names
-- ARGV[5+t..4+t+m]  the ids, in list order, matching KEYS[7..]
-- ARGV[5+t+m]  now (unix ms), for the expiry
-- Returns: a flat array token, id1, payload1, id2, payload2, ... of the jobs
--          taken (empty when none), as fetch.lua, and an entry "", "expired:<id>"
--          for each job set aside expired; {""} when the route is paused.
local want = bn_num(ARGV[1], 'count')
local deadline = bn_num(ARGV[2], 'lease deadline')
local token = bn_str(ARGV[3], 'token')
local t = bn_num(ARGV[4], 'type count')
local m = #KEYS - 7
if #ARGV ~= 5 + t + m then error('bananas: claim needs one id per job key, and now') end
local now = bn_num(ARGV[5 + t + m], 'now')
local expiry = KEYS[7 + m]
local types = {}
for i = 1, t do types[bn_str(ARGV[4 + i], 'type name')] = true end
bn_need_type(KEYS[1], 'list', 'ready list')
bn_need_type(KEYS[2], 'zset', 'active set')
bn_need_type(KEYS[3], 'hash', 'leases hash')
bn_need_type(KEYS[4], 'hash', 'payloads hash')
bn_need_type(KEYS[5], 'hash', 'groups hash')
if redis.call('HEXISTS', KEYS[5], token) == 1 then
  return bn_leased_under(KEYS[3], KEYS[4], token)
end
-- The expiry set rides in the paused key's EXISTS, named twice: an odd
-- count says paused, 2 or more that some job has an expiry.
local found = redis.call('EXISTS', KEYS[6], expiry, expiry)
if found % 2 == 1 then return {''} end
local expiring = found >= 2
if expiring then bn_need_type(expiry, 'zset', 'expiry set') end

local out, taken = {token}, 0
for i = 1, m do
  if taken >= want then break end
  local id = ARGV[4 + t + i]
  local payload = redis.call('HGET', KEYS[4], id)
  local name
  if payload then
    name = bn_split(payload)
  elseif bn_type(KEYS[6 + i], 'hash') then
    name = redis.call('HGET', KEYS[6 + i], 'n')
  end
  if name and types[name] and not redis.call('HGET', KEYS[3], id) and redis.call('LREM', KEYS[1], 1, id) == 1 then
    local at = expiring and redis.call('ZSCORE', expiry, id)
    if at and tonumber(at) <= now then
      out[#out + 1] = ''
      out[#out + 1] = 'expired:' .. id
    else
      if at then redis.call('ZREM', expiry, id) end
      taken = taken + 1
      redis.call('HSET', KEYS[3], id, token)
      out[#out + 1] = id
      out[#out + 1] = payload or ''
    end
  end
end
if taken > 0 then
  redis.call('ZADD', KEYS[2], deadline, token)
  redis.call('HSET', KEYS[5], token, taken)
end
if #out > 1 then return out end
return {}
