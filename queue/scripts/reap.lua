-- reap.lua: recover jobs whose lease expired (their worker died or lost Redis):
-- each counts a failed attempt and is retried or dead-lettered like fail.lua.
-- The caller read the expired ids and their attempts first; a job is only reaped
-- if it is still in the active set with a deadline <= now and its attempts are
-- unchanged, so a renewal or a completion that won the race is left alone.
--
-- KEYS[1]  ZSET  route:{r}:active
-- KEYS[2]  HASH  route:{r}:leases
-- KEYS[3]  ZSET  route:{r}:scheduled
-- KEYS[4]  ZSET  route:{r}:dead
-- KEYS[5]  HASH  route:{r}:stats
-- KEYS[6]  HASH  route:{r}:payloads  (a light job gets its hash here first)
-- KEYS[7+2i]  HASH    route:{r}:job:<id_i>
-- KEYS[8+2i]  STRING  route:{r}:result:<id_i>
-- ARGV[1]  now (unix ms)
-- ARGV[2]  result channel prefix (the channel is prefix .. id .. "}")
-- ARGV[3]  schedule channel
-- ARGV[4+5i .. 8+5i] per job: id, attempts read, retry-at ms, failure record, failure ttl ms
-- Returns: an array of per-job outcomes: 0 skipped, 1 retry, 2 dead, 3 orphan lease removed.
local now = bn_num(ARGV[1], 'now')
local prefix = bn_str(ARGV[2], 'channel prefix')
local sched = bn_str(ARGV[3], 'schedule channel')
local n = (#KEYS - 6) / 2
if n ~= math.floor(n) or #ARGV ~= 3 + 5 * n then error('bananas: reap needs 2 keys and 5 args per job') end
for i = 0, n - 1 do
  local a = 4 + 5 * i
  bn_str(ARGV[a], 'job id')
  bn_num(ARGV[a + 1], 'attempts')
  bn_num(ARGV[a + 2], 'retry-at')
  if bn_num(ARGV[a + 4], 'failure ttl') <= 0 then error('bananas: failure ttl must be > 0') end
end

local out = {}
for i = 0, n - 1 do
  local a = 4 + 5 * i
  local id = ARGV[a]
  local job, result = KEYS[7 + 2 * i], KEYS[8 + 2 * i]
  local score = redis.call('ZSCORE', KEYS[1], id)
  local deadline = score and tonumber(score) or math.huge
  local outcome = 0
  if deadline <= now then
    local exists = redis.call('EXISTS', job) == 1
    local payload = not exists and redis.call('HGET', KEYS[6], id)
    if not exists and not payload then
      redis.call('ZREM', KEYS[1], id)
      redis.call('HDEL', KEYS[2], id)
      outcome = 3
    elseif tonumber(payload and '0' or redis.call('HGET', job, 'a') or '0') == tonumber(ARGV[a + 1]) then
      redis.call('ZREM', KEYS[1], id)
      redis.call('HDEL', KEYS[2], id)
      if payload then bn_materialize(job, KEYS[6], id, payload) end
      redis.call('HINCRBY', KEYS[5], 'recovered', 1)
      outcome = bn_settle(job, KEYS[3], KEYS[4], result, KEYS[5], id, now,
        'lease expired: the worker running it stopped renewing (crashed or lost Redis)',
        tonumber(ARGV[a + 2]), 0, ARGV[a + 3], tonumber(ARGV[a + 4]), prefix .. id .. '}', sched)
    end
  end
  out[#out + 1] = outcome
end
return out
