-- reap.lua: recover jobs whose lease expired (their worker died or lost Redis):
-- each counts a failed attempt and is retried or dead-lettered like fail.lua.
-- The caller read the expired lease groups, the jobs still leased in them and
-- their attempts first; a job is only reaped if its lease is still that group's,
-- the group's deadline is still <= now, and its attempts field reads as the
-- caller read it (byte for byte), so a renewal or a completion that won the
-- race is left alone. Expired groups the caller found no leased job in are
-- dropped.
--
-- A job with a cancel request (its id in the cancels set: asked while it
-- ran, and its worker died before acting on it) is not retried: it ends
-- canceled as canceled.lua ends it, with the caller's record (a canceled
-- one) stored and announced, what the job was dropped, and its request
-- removed, whatever else the job holds (garbage counts, a job key of
-- another type). The caller says whether it read a request for the job; a
-- job whose request came or went since is skipped, for the next pass.
--
-- A bad entry is handled on its own and never fails the batch, so that one
-- cannot keep every later crashed job of the route from being recovered:
--   - an empty id (no job can have it): its lease is dropped;
--   - a job key that is not a hash: its value is moved to the job's garbage
--     key; a light job (payload present) then gets its hash and is reaped as
--     usual, anything else is dead-lettered as a stub hash whose error says so;
--   - a job whose attempts (a) or max retries (m) is garbage: dead-lettered
--     without counting, its error naming the field.
-- Each such entry's reply carries the reason, for the caller to log. Route
-- keys of the wrong type raise before any write. Run twice, the second call
-- finds the leases gone or changed and writes nothing.
--
-- KEYS[1]  ZSET  route:{r}:active     lease group token -> deadline ms
-- KEYS[2]  HASH  route:{r}:leases     id -> token
-- KEYS[3]  ZSET  route:{r}:scheduled
-- KEYS[4]  ZSET  route:{r}:dead
-- KEYS[5]  HASH  route:{r}:stats
-- KEYS[6]  HASH  route:{r}:payloads  (a light job gets its hash here first)
-- KEYS[7]  HASH  route:{r}:groups    lease group token -> jobs still leased
-- KEYS[8]  HASH  route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[9]  SET   route:{r}:cancels    ids of running jobs asked to stop
-- KEYS[10+4i]  HASH    route:{r}:job:<id_i>
-- KEYS[11+4i]  STRING  route:{r}:result:<id_i>
-- KEYS[12+4i]  any     route:{r}:garbage:<id_i>  where a job key that is not a hash goes
-- KEYS[13+4i]  STRING  route:{r}:unique:<u>, the unique key the job holds as the caller
--              read it, or the job key again: a death or a cancel frees a key held
--              until started or ended (see _unique.lua); a retry keeps it
-- KEYS[#KEYS-12]  LIST  route:{r}:ended (task history), or the stats key again when the caller keeps none
-- KEYS[#KEYS-11..]  the route's flow keys (Keys.FlowKeys): a keyed job's slot
--          is freed, and its hash keeps its flow and place (fields k and q)
-- ARGV[1]  now (unix ms)
-- ARGV[2]  result channel prefix (the channel is prefix .. id .. "}")
-- ARGV[3]  schedule channel
-- ARGV[4]  e, the number of empty expired groups that follow
-- ARGV[5..4+e]  their tokens
-- ARGV[5+e+7i .. 11+e+7i] per job: id, its lease token, its attempts field as
--          read ("" when absent or when the job has no hash), retry-at ms,
--          record (a failure's, or a canceled one when a request was read),
--          its ttl ms, "1" when the caller read a cancel request for the job
--          (else "0")
-- Returns: an array with one reply per job: 0 skipped, 1 retry, 2 dead, 3
--          orphan lease removed, 6 ended canceled; or, for a bad entry, a
--          pair {outcome, reason} with outcome 3 (lease dropped) or 4
--          (dead-lettered as garbage).
local now = bn_num(ARGV[1], 'now')
local prefix = bn_str(ARGV[2], 'channel prefix')
local sched = bn_str(ARGV[3], 'schedule channel')
local e = bn_num(ARGV[4], 'empty group count')
local n = (#KEYS - 22) / 4
if n ~= math.floor(n) or #ARGV ~= 4 + e + 7 * n then error('bananas: reap needs 4 keys and 7 args per job, the ended list and the flow keys') end
local ended = KEYS[#KEYS - 12]
local F = bn_flowkeys()
for i = 0, n - 1 do
  local a = 5 + e + 7 * i
  bn_num(ARGV[a + 3], 'retry-at')
  if bn_num(ARGV[a + 5], 'failure ttl') <= 0 then error('bananas: failure ttl must be > 0') end
  if ARGV[a + 6] ~= '0' and ARGV[a + 6] ~= '1' then error('bananas: cancel read must be 0 or 1, got ' .. tostring(ARGV[a + 6])) end
end
bn_need_type(KEYS[1], 'zset', 'active set')
bn_need_type(KEYS[2], 'hash', 'leases hash')
bn_need_type(KEYS[3], 'zset', 'scheduled set')
bn_need_type(KEYS[4], 'zset', 'dead-letter set')
bn_need_type(KEYS[6], 'hash', 'payloads hash')
bn_need_type(KEYS[7], 'hash', 'groups hash')
bn_need_type(KEYS[9], 'set', 'cancels set')

-- token_ms is when the lease of token began, the time its first part
-- carries in base 36 (queue's fetchToken); 0 for a token that does not.
local function token_ms(token)
  local t = tonumber(string.match(token or '', '^(%w+)%-') or '', 36)
  if not t or t < 0 or t >= 2^53 then return 0 end
  return math.floor(t)
end

local function expired(token)
  local score = redis.call('ZSCORE', KEYS[1], token)
  return score ~= false and score ~= nil and tonumber(score) <= now
end

local lost = 'lease expired: the worker running it stopped renewing (crashed or lost Redis)'

-- Every read of a job comes before its writes, and nothing written for one
-- job can make the reads or writes of the next raise (the route keys' types
-- are checked above, job keys' types per job), so no job is left half-moved.
-- unslot frees the slot of a reaped keyed job; one that stays (retried or
-- dead-lettered) keeps its flow and place in its hash.
local function unslot(id, job)
  local member, freed_held = bn_flow_release(F, id, now, false)
  bn_flow_wake(F, 1, now, freed_held)
  local flow, seq
  if member then flow, seq = bn_member_parts(member) end
  if flow and bn_typeof(job) == 'hash' then redis.call('HSET', job, 'k', flow, 'q', seq) end
end
if n > 0 then bn_flow_repair(F) end
local out = {}
for i = 0, n - 1 do
  local a = 5 + e + 7 * i
  local id, token, read_a = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local retry_at, record, ttl = tonumber(ARGV[a + 3]), ARGV[a + 4], tonumber(ARGV[a + 5])
  local read_asked = ARGV[a + 6] == '1'
  local job, result, garbage, ukey = KEYS[10 + 4 * i], KEYS[11 + 4 * i], KEYS[12 + 4 * i], KEYS[13 + 4 * i]
  local channel = prefix .. id .. '}'
  local reply = 0
  local asked = redis.call('SISMEMBER', KEYS[9], id) == 1
  if redis.call('HGET', KEYS[2], id) == token and expired(token) and asked == read_asked then
    local kind = bn_typeof(job)
    local payload = kind ~= 'hash' and redis.call('HGET', KEYS[6], id)
    local fields = kind == 'hash' and redis.call('HMGET', job, 'a', 'm') or {}
    local frees = {dead = bn_unique_ends(job, ukey, id, 'dead', KEYS[6]), canceled = bn_unique_ends(job, ukey, id, 'canceled', KEYS[6])}
    if id == '' then
      redis.call('HDEL', KEYS[2], id)
      bn_release(KEYS[1], KEYS[7], token, 1)
      reply = {3, 'an empty id was leased (no job can have it); its lease was dropped'}
    elseif kind ~= 'hash' and kind ~= 'none' then
      redis.call('HDEL', KEYS[2], id)
      bn_release(KEYS[1], KEYS[7], token, 1)
      bn_count(KEYS[5], 'recovered', 1)
      local why = not asked and bn_set_aside(job, garbage, kind)
      if asked then
        -- Nothing of the job is needed to end it canceled; what its key held
        -- goes with it, as no dead-lettered stub is there to be purged with it.
        bn_end_canceled(result, record, ttl, channel, KEYS[9], id, KEYS[5], KEYS[8], ended, now, job, KEYS[6])
        reply = {6, 'job ' .. id .. ': its job key held a ' .. kind .. ', not a job hash; dropped, as the job was asked to cancel and ends canceled'}
      elseif payload then
        local max = bn_materialize(job, KEYS[6], id, payload)
        reply = {bn_settle(job, KEYS[3], KEYS[4], result, KEYS[5], KEYS[8], id, now, lost, retry_at, 0, record, ttl, channel, sched, 0, max, ended, token_ms(token)),
          'job ' .. id .. ': ' .. why .. '; its payload was kept and it was recovered'}
      else
        bn_stub(job, now)
        bn_count(KEYS[5], 'failed', 1)
        bn_bury(job, KEYS[4], KEYS[5], id, now, 'dead-lettered: ' .. why)
        redis.call('SET', result, record, 'PX', ttl)
        bn_ended(ended, KEYS[5], record)
        redis.call('PUBLISH', channel, record)
        reply = {4, 'job ' .. id .. ': ' .. why .. '; dead-lettered as a stub'}
      end
    elseif kind == 'none' and not payload then
      redis.call('HDEL', KEYS[2], id)
      bn_release(KEYS[1], KEYS[7], token, 1)
      reply = 3
    elseif (fields[1] or '') == read_a then
      local why = kind == 'hash' and (bn_bad_count(fields[1], 'its attempts (field a)', true) or
        bn_bad_count(fields[2], 'its max retries (field m)', false))
      redis.call('HDEL', KEYS[2], id)
      bn_release(KEYS[1], KEYS[7], token, 1)
      bn_count(KEYS[5], 'recovered', 1)
      -- Asked to cancel, a job ends canceled whatever its counts hold: they
      -- only matter to a retry, and the caller's record is a canceled one.
      if asked then
        bn_end_canceled(result, record, ttl, channel, KEYS[9], id, KEYS[5], KEYS[8], ended, now, job, KEYS[6])
        reply = 6
      elseif why then
        bn_count(KEYS[5], 'failed', 1)
        bn_bury(job, KEYS[4], KEYS[5], id, now, 'dead-lettered without a retry: ' .. why .. '; ' .. lost)
        redis.call('SET', result, record, 'PX', ttl)
        bn_ended(ended, KEYS[5], record)
        redis.call('PUBLISH', channel, record)
        reply = {4, 'job ' .. id .. ': ' .. why .. '; dead-lettered'}
      else
        local prior, max = tonumber(fields[1] or '0'), tonumber(fields[2])
        if payload then prior, max = 0, bn_materialize(job, KEYS[6], id, payload) end
        reply = bn_settle(job, KEYS[3], KEYS[4], result, KEYS[5], KEYS[8], id, now, lost, retry_at, 0, record, ttl, channel, sched, prior, max, ended, token_ms(token))
      end
    end
    if reply ~= 0 then unslot(id, job) end
    local outcome = type(reply) == 'table' and reply[1] or reply
    if (outcome == 2 or outcome == 4) and frees.dead or outcome == 6 and frees.canceled then redis.call('DEL', ukey) end
  end
  out[#out + 1] = reply
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
