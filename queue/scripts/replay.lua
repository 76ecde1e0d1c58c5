-- replay.lua: take a job out of the dead-letter set and make it ready again with
-- its attempts reset and its failure record and failure times removed.
--
-- The life that ends here is kept for the job's timeline: one field ph<k> (k
-- counts the replays, field pn) holds its first run's number, its attempts,
-- its last start, its death, the replay time, its failure times and its error
-- (cut to 1024 bytes), and field pr counts the runs of every kept life, so
-- the next life's runs are numbered after them. The last 10 lives are kept.
-- A pn or pr that is not a whole number leaves the job dead, nothing written,
-- like a garbage priority.
--
-- A dead-letter entry whose job is gone is dropped here, in the same atomic
-- step that finds it gone (a separate removal could take out a job that died
-- again in between). A job that cannot be made ready — its priority (p)
-- missing or garbage, its job key not a hash — stays dead, nothing written,
-- and the reply says why, so it can be repaired and replayed. Route keys of
-- the wrong type raise before any write. Run twice, the second call finds the
-- job out of the dead-letter set and writes nothing; it answers replayed when
-- the job holds this call's token (field rt: its own first run replayed it),
-- else not in the dead-letter set.
--
-- A job that holds a unique key (its field u, see _unique.lua; the caller
-- passes the key in KEYS[9]) takes it back, for its ttl (field ut), as it
-- waits again: a key its death freed that another job took since leaves the
-- job dead, nothing written, and the reply names that job. A resend finds
-- the key its own.
--
-- Given a task name, only a job of that task (its field n) is replayed;
-- another is left dead, nothing written, and so is an entry whose job key is
-- not a hash or is gone: its task cannot be told.
--
-- KEYS[1]  HASH    route:{r}:job:<id>
-- KEYS[2]  ZSET    route:{r}:dead
-- KEYS[3]  LIST    route:{r}:queue:high
-- KEYS[4]  LIST    route:{r}:queue:normal
-- KEYS[5]  LIST    route:{r}:queue:low
-- KEYS[6]  STRING  route:{r}:result:<id>
-- KEYS[7]  HASH    route:{r}:stats
-- KEYS[8]  ZSET    route:{r}:idle   waiting workers: one is woken (bn_wake)
-- KEYS[9]  STRING  route:{r}:unique:<u>, the unique key the job holds, or the job key again
-- KEYS[10..21]  the route's flow keys (Keys.FlowKeys): a keyed job (field k)
--          waits at the back of its flow instead of a list
-- ARGV[1]  id (any string the dead-letter set holds, even "")
-- ARGV[2]  the route's wake channel, for workers that take only some tasks
-- ARGV[3]  task name to replay only jobs of ("" or absent: any)
-- ARGV[4]  now (unix ms): when the replay happens, kept with the life it ends
-- ARGV[5]  the call's token (random; "" or absent: none), left on the job
--          (field rt) so that a resend of this call knows its first run
-- Returns: a pair {outcome, reason}: {1, ""} replayed (by this call, or by
--          its first run when it is a resend), {0, ""} not in the
--          dead-letter set, {2, reason} an entry without a job, dropped, or
--          {3, reason} left dead: it cannot be replayed as it is, or
--          {4, ""} left dead: of another task, or {5, holder} left dead: its
--          unique key is held by job holder.
local id = ARGV[1] or ''
bn_str(ARGV[2], 'wake channel')
local task = ARGV[3] or ''
local now = bn_num(ARGV[4], 'now')
bn_need_type(KEYS[2], 'zset', 'dead-letter set')
for k = 3, 5 do bn_need_type(KEYS[k], 'list', 'ready list') end
local token = ARGV[5] or ''
if not redis.call('ZSCORE', KEYS[2], id) then
  -- A resent call (its reply lost) finds the job out of the dead-letter set
  -- by its own first run, which left its token on the job: it answers as
  -- the first run did, writing nothing.
  if token ~= '' and bn_typeof(KEYS[1]) == 'hash' and redis.call('HGET', KEYS[1], 'rt') == token then return {1, ''} end
  return {0, ''}
end
local kind = bn_typeof(KEYS[1])
if task ~= '' and (kind ~= 'hash' or redis.call('HGET', KEYS[1], 'n') ~= task) then return {4, ''} end
if kind == 'none' then
  redis.call('ZREM', KEYS[2], id)
  return {2, 'dead-letter entry ' .. id .. ' has no job; dropped'}
end
if kind ~= 'hash' then
  return {3, 'job key ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a job hash; left in the dead-letter set'}
end
local prio = redis.call('HGET', KEYS[1], 'p')
local past = redis.call('HMGET', KEYS[1], 'pn', 'pr', 'err', 'st', 'f')
local why = bn_bad_prio(prio) or bn_bad_count(past[1], 'its replay count (field pn)', true)
  or bn_bad_count(past[2], 'its count of earlier runs (field pr)', true)
if why then return {3, 'job ' .. id .. ': ' .. why .. '; left in the dead-letter set until repaired'} end
local lives, runs = tonumber(past[1] or '0'), tonumber(past[2] or '0')
local uniq = redis.call('HMGET', KEYS[1], 'u', 'ut')
local retake = false
if uniq[1] and KEYS[9] ~= KEYS[1] and string.sub(KEYS[9], -(#uniq[1] + 8)) == ':unique:' .. uniq[1] then
  if not bn_type(KEYS[9], 'string') then
    return {3, 'unique key ' .. KEYS[9] .. ' is not a string; left in the dead-letter set'}
  end
  local holder = redis.call('GET', KEYS[9])
  if holder and holder ~= id then return {5, holder} end
  retake = tonumber(uniq[2] or '') or 0
  if retake < 1 then retake = false end
end

local gone = {'err', 'f', 'st', 'r'}
local attempts = tonumber(redis.call('HGET', KEYS[1], 'a'))
local failed = {}
if attempts and attempts >= 1 and attempts < 2^53 then
  attempts = math.floor(attempts)
  for k = math.max(1, attempts - bn_failed_kept + 1), attempts do
    gone[#gone + 1] = 'fa' .. k
    gone[#gone + 1] = 'sa' .. k
    local t = tonumber(redis.call('HGET', KEYS[1], 'fa' .. k))
    if t then failed[#failed + 1] = string.format('%d', t) end
  end
else
  attempts = 0
end
local function ms(v) return string.format('%d', tonumber(v) or 0) end
local life = string.format('%d %d %s %s %s %s', runs + 1, attempts, ms(past[4]), ms(past[5]), ms(now),
  #failed > 0 and table.concat(failed, ',') or '-') .. '\n' .. string.sub(past[3] or '', 1, 1024)
redis.call('ZREM', KEYS[2], id)
redis.call('DEL', KEYS[6])
if retake then redis.call('SET', KEYS[9], id, 'PX', retake) end
redis.call('HDEL', KEYS[1], unpack(gone))
redis.call('HSET', KEYS[1], 'a', 0, 's', 'q', 'pn', lives + 1, 'pr', runs + attempts, 'ph' .. (lives + 1), life)
if token ~= '' then redis.call('HSET', KEYS[1], 'rt', token) else redis.call('HDEL', KEYS[1], 'rt') end
if lives + 1 > 10 then redis.call('HDEL', KEYS[1], 'ph' .. (lives + 1 - 10)) end
bn_count(KEYS[7], 'replayed', 1)
bn_wake(KEYS[8], 1, now)
local flow = redis.call('HGET', KEYS[1], 'k')
if flow and string.find(flow, '|', 1, true) then
  local F = bn_flowkeys()
  bn_flow_repair(F)
  local seq = bn_flow_next_seq(F)
  redis.call('HSET', KEYS[1], 'q', string.format('%015.0f', seq))
  if bn_flow_add(F, bn_prios[prio], bn_member(flow, seq, id), id) == 1 then redis.call('PUBLISH', ARGV[2], '1') end
  return {1, ''}
end
if bn_push(KEYS[2 + bn_prios[prio]], id, false) then redis.call('PUBLISH', ARGV[2], '1') end
return {1, ''}
