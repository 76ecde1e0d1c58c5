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
-- KEYS[7..]  LIST  route:{r}:queue:<priority>, in the order to drain them
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
-- Returns: a flat array token, id1, payload1, id2, payload2, ... (empty when
--          nothing was taken or dropped, or the route is paused): the call's token once, then each
--          job's id and payload; payload is "" for a job with its own hash; an
--          id "" marks a dropped entry, its payload the reason.
local want = bn_num(ARGV[1], 'count')
local deadline = bn_num(ARGV[2], 'lease deadline')
local token = bn_str(ARGV[3], 'token')
local waiter = ARGV[4] or ''
local waiter_until = 0
if waiter ~= '' then waiter_until = bn_num(ARGV[5], 'idle until') end
if want < 1 then error('bananas: count must be >= 1') end
if #KEYS < 7 then error('bananas: fetch needs at least one list key') end
-- Nothing ready, and no earlier run of this call to answer for: the fetch of
-- an idle worker (its safety poll, or a wake-up another worker won) costs
-- four commands instead of one per key. Its only write is the worker's
-- idle entry, which bn_idle guards itself.
if redis.call('EXISTS', unpack(KEYS, 7)) == 0 and
    not (bn_type(KEYS[4], 'hash') and redis.call('HEXISTS', KEYS[4], token) == 1) then
  if waiter ~= '' then bn_idle(KEYS[6], waiter, waiter_until) end
  return {}
end
bn_need_type(KEYS[1], 'zset', 'active set')
bn_need_type(KEYS[2], 'hash', 'leases hash')
bn_need_type(KEYS[3], 'hash', 'payloads hash')
bn_need_type(KEYS[4], 'hash', 'groups hash')
for k = 7, #KEYS do bn_need_type(KEYS[k], 'list', 'ready list') end

if redis.call('HEXISTS', KEYS[4], token) == 1 then
  return bn_leased_under(KEYS[2], KEYS[3], token)
end
if redis.call('EXISTS', KEYS[5]) == 1 then
  -- resume.lua wakes every registered worker.
  if waiter ~= '' then bn_idle(KEYS[6], waiter, waiter_until) end
  return {}
end

local out = {token}
local taken = 0
for k = 7, #KEYS do
  if taken >= want then break end
  local ids = redis.call('LPOP', KEYS[k], want - taken)
  if ids then
    local tokens, seen = {}, {}
    for first = 1, #ids, 200 do
      local last = math.min(first + 199, #ids)
      local pays = redis.call('HMGET', KEYS[3], unpack(ids, first, last))
      local held = redis.call('HMGET', KEYS[2], unpack(ids, first, last))
      for j = 1, #pays do
        local id = ids[first + j - 1]
        if id == '' then
          out[#out + 1] = ''
          out[#out + 1] = 'an empty id in ' .. KEYS[k]
        elseif held[j] or seen[id] then
          out[#out + 1] = ''
          out[#out + 1] = 'job ' .. id .. ' is in ' .. KEYS[k] .. ' but already leased'
        else
          taken = taken + 1
          tokens[#tokens + 1] = id
          tokens[#tokens + 1] = token
          seen[id] = true
          out[#out + 1] = id
          out[#out + 1] = pays[j] or ''
        end
      end
    end
    if #tokens > 0 then bn_sliced('HSET', KEYS[2], tokens) end
  end
end
if taken > 0 then
  redis.call('ZADD', KEYS[1], deadline, token)
  redis.call('HSET', KEYS[4], token, taken)
end
if taken < want and waiter ~= '' then bn_idle(KEYS[6], waiter, waiter_until) end
if #out > 1 then return out end
return {}
