-- handback.lua: give back, without counting an attempt, jobs leased by a fetch
-- whose reply the worker never read (the reply was lost, or the worker could
-- not read their job hashes): each goes back to the FRONT of its ready list, in
-- the order given, so it runs next. Fenced: only jobs still leased under the
-- token move.
--
-- The token is then marked used until a deadline: a late copy of the fetch
-- (a client retry, or the lost command itself arriving late) finds the token
-- used and takes nothing (see fetch.lua), instead of leasing jobs to nobody.
-- The marker is an empty lease group, which the reaper drops once expired.
--
-- KEYS[1]  ZSET  route:{r}:active
-- KEYS[2]  HASH  route:{r}:leases
-- KEYS[3]  HASH  route:{r}:payloads
-- KEYS[4]  HASH  route:{r}:groups
-- KEYS[5]  LIST  route:{r}:queue:high
-- KEYS[6]  LIST  route:{r}:queue:normal
-- KEYS[7]  LIST  route:{r}:queue:low
-- KEYS[7+i]  HASH  route:{r}:job:<id_i>, one per id
-- ARGV[1]  fencing token of the fetch
-- ARGV[2]  marker deadline (unix ms): until when a late copy must find the token used
-- ARGV[3]  wake channel
-- ARGV[3+i]  the ids, matching KEYS[7+i]
-- Returns: the number of jobs handed back.
local token = bn_str(ARGV[1], 'token')
local marker = bn_num(ARGV[2], 'marker deadline')
bn_str(ARGV[3], 'wake channel')
if #ARGV - 3 ~= #KEYS - 7 then error('bananas: handback needs one id per job key') end
bn_need_type(KEYS[1], 'zset', 'active set')
bn_need_type(KEYS[2], 'hash', 'leases hash')
bn_need_type(KEYS[3], 'hash', 'payloads hash')
bn_need_type(KEYS[4], 'hash', 'groups hash')
for k = 5, 7 do bn_need_type(KEYS[k], 'list', 'ready list') end

-- Read and decide everything first.
local back, gone = {}, {}
for i = 4, #ARGV do
  local id = ARGV[i]
  if id ~= '' and redis.call('HGET', KEYS[2], id) == token then
    local prio
    local payload = redis.call('HGET', KEYS[3], id)
    if payload then
      local _, p = bn_split(payload)
      prio = p
    elseif bn_type(KEYS[4 + i], 'hash') then
      prio = redis.call('HGET', KEYS[4 + i], 'p')
    else
      prio = 'normal' -- a job key of another type: the next fetch reports it
    end
    if payload or redis.call('EXISTS', KEYS[4 + i]) == 1 then
      back[#back + 1] = { id, KEYS[4 + (bn_prios[prio] or 2)] }
    else
      gone[#gone + 1] = id -- finished meanwhile: only its lease is left
    end
  end
end

local released = #back + #gone
for i = #back, 1, -1 do
  redis.call('HDEL', KEYS[2], back[i][1])
  redis.call('LPUSH', back[i][2], back[i][1])
end
for _, id in ipairs(gone) do redis.call('HDEL', KEYS[2], id) end
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
if #back > 0 then redis.call('PUBLISH', ARGV[3], '1') end
return #back
