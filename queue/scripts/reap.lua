-- reap.lua: recover jobs whose lease expired (their worker died or lost Redis):
-- each counts a failed attempt and is retried or dead-lettered like fail.lua.
-- The caller read the expired lease groups, the jobs still leased in them and
-- their attempts first; a job is only reaped if its lease is still that group's,
-- the group's deadline is still <= now, and its attempts are unchanged, so a
-- renewal or a completion that won the race is left alone. Expired groups the
-- caller found no leased job in are dropped.
--
-- KEYS[1]  ZSET  route:{r}:active     lease group token -> deadline ms
-- KEYS[2]  HASH  route:{r}:leases     id -> token
-- KEYS[3]  ZSET  route:{r}:scheduled
-- KEYS[4]  ZSET  route:{r}:dead
-- KEYS[5]  HASH  route:{r}:stats
-- KEYS[6]  HASH  route:{r}:payloads  (a light job gets its hash here first)
-- KEYS[7]  HASH  route:{r}:groups    lease group token -> jobs still leased
-- KEYS[8+2i]  HASH    route:{r}:job:<id_i>
-- KEYS[9+2i]  STRING  route:{r}:result:<id_i>
-- ARGV[1]  now (unix ms)
-- ARGV[2]  result channel prefix (the channel is prefix .. id .. "}")
-- ARGV[3]  schedule channel
-- ARGV[4]  e, the number of empty expired groups that follow
-- ARGV[5..4+e]  their tokens
-- ARGV[5+e+6i .. 10+e+6i] per job: id, its lease token, attempts read, retry-at ms,
--          failure record, failure ttl ms
-- Returns: an array of per-job outcomes: 0 skipped, 1 retry, 2 dead, 3 orphan lease removed.
local now = bn_num(ARGV[1], 'now')
local prefix = bn_str(ARGV[2], 'channel prefix')
local sched = bn_str(ARGV[3], 'schedule channel')
local e = bn_num(ARGV[4], 'empty group count')
local n = (#KEYS - 7) / 2
if n ~= math.floor(n) or #ARGV ~= 4 + e + 6 * n then error('bananas: reap needs 2 keys and 6 args per job') end
for i = 1, e do bn_str(ARGV[4 + i], 'group token') end
for i = 0, n - 1 do
  local a = 5 + e + 6 * i
  bn_str(ARGV[a], 'job id')
  bn_str(ARGV[a + 1], 'token')
  bn_num(ARGV[a + 2], 'attempts')
  bn_num(ARGV[a + 3], 'retry-at')
  if bn_num(ARGV[a + 5], 'failure ttl') <= 0 then error('bananas: failure ttl must be > 0') end
end

local function expired(token)
  local score = redis.call('ZSCORE', KEYS[1], token)
  return score ~= false and score ~= nil and tonumber(score) <= now
end

local out = {}
for i = 0, n - 1 do
  local a = 5 + e + 6 * i
  local id, token = ARGV[a], ARGV[a + 1]
  local job, result = KEYS[8 + 2 * i], KEYS[9 + 2 * i]
  local outcome = 0
  if redis.call('HGET', KEYS[2], id) == token and expired(token) then
    local exists = redis.call('EXISTS', job) == 1
    local payload = not exists and redis.call('HGET', KEYS[6], id)
    if not exists and not payload then
      redis.call('HDEL', KEYS[2], id)
      bn_release(KEYS[1], KEYS[7], token, 1)
      outcome = 3
    elseif tonumber(payload and '0' or redis.call('HGET', job, 'a') or '0') == tonumber(ARGV[a + 2]) then
      redis.call('HDEL', KEYS[2], id)
      bn_release(KEYS[1], KEYS[7], token, 1)
      if payload then bn_materialize(job, KEYS[6], id, payload) end
      bn_count(KEYS[5], 'recovered', 1)
      outcome = bn_settle(job, KEYS[3], KEYS[4], result, KEYS[5], id, now,
        'lease expired: the worker running it stopped renewing (crashed or lost Redis)',
        tonumber(ARGV[a + 3]), 0, ARGV[a + 4], tonumber(ARGV[a + 5]), prefix .. id .. '}', sched)
    end
  end
  out[#out + 1] = outcome
end
-- A group with no leased job left (its count out of step, or its last jobs
-- reaped above) leaves the active set once expired; no lease can join a group
-- after its fetch, so "none leased when the caller looked" stays true.
for i = 1, e do
  local token = ARGV[4 + i]
  if expired(token) then
    redis.call('ZREM', KEYS[1], token)
    redis.call('HDEL', KEYS[7], token)
  end
end
return out
