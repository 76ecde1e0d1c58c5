-- ack.lua: complete jobs of one route successfully: store each one's result
-- record under its result key with the result TTL and announce it, release its
-- lease, and drop what the job was (a light job's payload, or its hash): a
-- finished job is its result record, or nothing at all for a job that keeps
-- none (result ttl 0: announced and appended to the ended list, not stored).
-- Several acks travel in one call when workers finish together. Fenced: an
-- ack whose token is no longer the job's (its lease was reaped or handed
-- back) changes nothing, and so does a second run of the same call (a client
-- retry): the first run released the leases.
--
-- KEYS[1]  ZSET  route:{r}:active
-- KEYS[2]  HASH  route:{r}:leases
-- KEYS[3]  HASH  route:{r}:stats
-- KEYS[4]  HASH  route:{r}:payloads
-- KEYS[5]  HASH  route:{r}:groups
-- KEYS[6]  HASH  route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[6+i]  STRING  route:{r}:result:<id_i>, i = 1..n
-- KEYS[7+n..]  HASH  route:{r}:job:<id> of the jobs dispatched with a hash of their own,
--              and of light jobs that hold a unique key (their payload names it),
--              each followed by its unique key when it holds one (see _unique.lua):
--              a completion frees the key, while its value is still the job's id
-- KEYS[#KEYS-12]  LIST  route:{r}:ended: the records are appended for the task history,
--              or the stats key again when the caller keeps none
-- KEYS[#KEYS-11..]  the route's flow keys (Keys.FlowKeys): a keyed job's slot is freed
-- ARGV[1]  result channel prefix (a job's channel is prefix .. id .. "}")
-- ARGV[2]  1: announce only on channels with a subscriber (standalone Redis,
--          where PUBSUB NUMSUB sees every subscriber); 0: always (Redis Cluster)
-- ARGV[3]  now (unix ms): the minute the stats series counts the acks in
-- ARGV[4]  b, the number of stats series time buckets that follow
-- ARGV[5 .. 4+2b] pairs bucket field (w<i> a wait, t<i> a run time), count:
--          the call's jobs summed by the caller
-- ARGV[5+2b+5(i-1) .. 9+2b+5(i-1)] per job i: id, fencing token, result record
--          (opaque bytes, also the pub/sub payload), result ttl ms (0: the
--          record is not stored), and the index in KEYS of its job hash, or 0
--          for a light job; negated when its unique key follows the job hash
-- Returns: an array with, per job, 1 completed or 0 stale token or job gone
--          (nothing written). A second run of a call answers 0 for the jobs the
--          first completed: it cannot tell them from jobs whose lease was lost.
local prefix = bn_str(ARGV[1], 'channel prefix')
local only_heard = bn_num(ARGV[2], 'announce flag') == 1
local now = bn_num(ARGV[3], 'now')
local b = bn_num(ARGV[4], 'bucket count')
local first_job = 5 + 2 * b
local n = (#ARGV - first_job + 1) / 5
if b < 0 or n < 1 or n ~= math.floor(n) then
  error('bananas: ack needs a channel prefix, an announce flag, now, the series buckets and five args per job')
end
bn_check_buckets(5, first_job - 1)
local ids, channels = {}, {}
for i = 1, n do
  local a = first_job + 5 * (i - 1)
  ids[i] = bn_str(ARGV[a], 'job id')
  bn_str(ARGV[a + 1], 'token')
  if bn_num(ARGV[a + 3], 'result ttl') < 0 then error('bananas: result ttl must be >= 0') end
  local jk = bn_num(ARGV[a + 4], 'job key index')
  if jk ~= 0 and (math.abs(jk) <= 6 + n or math.abs(jk) + (jk < 0 and 1 or 0) >= #KEYS - 12) then error('bananas: job key index out of range') end
  channels[i] = prefix .. ids[i] .. '}'
end
if #KEYS < 19 + n then error('bananas: ack needs a result key per job, the ended list and the flow keys') end
local ended = KEYS[#KEYS - 12]
local F = bn_flowkeys()
bn_need_type(KEYS[1], 'zset', 'active set')
bn_need_type(KEYS[4], 'hash', 'payloads hash')
bn_need_type(KEYS[5], 'hash', 'groups hash')

-- The tokens of all the jobs in one read (which checks the leases hash's
-- type, bn_checked, before any write), and who listens. A light job's
-- payload is not read: while its token is still the job's, the job is leased
-- and light (only fail and reap, which take the lease, give it a hash).
local tokens, heard = {}, {}
for first = 1, n, 200 do
  local last = math.min(first + 199, n)
  local got = bn_checked('leases hash', 'hash', 'HMGET', KEYS[2], unpack(ids, first, last))
  for j = 1, #got do tokens[first + j - 1] = got[j] end
  if only_heard then
    local subs = redis.call('PUBSUB', 'NUMSUB', unpack(channels, first, last))
    for j = 2, #subs, 2 do heard[first + j / 2 - 1] = tonumber(subs[j]) > 0 end
  end
end

local out, done, light, heavy, records, released, freed = {}, {}, {}, {}, {}, {}, {}
for i = 1, n do
  local a = first_job + 5 * (i - 1)
  local jk = tonumber(ARGV[a + 4])
  local ukey
  if jk < 0 then
    jk = -jk
    ukey = KEYS[jk + 1]
  end
  out[i] = 0
  if tokens[i] == ARGV[a + 1] then
    local ok = true
    if jk == 0 then
      light[#light + 1] = ids[i]
    elseif redis.call('EXISTS', KEYS[jk]) == 1 then
      heavy[#heavy + 1] = KEYS[jk]
      if ukey and bn_unique_ends(KEYS[jk], ukey, ids[i], 'completed') then freed[#freed + 1] = ukey end
    elseif ukey and redis.call('HEXISTS', KEYS[4], ids[i]) == 1 then
      light[#light + 1] = ids[i]
      if bn_unique_ends(KEYS[jk], ukey, ids[i], 'completed', KEYS[4]) then freed[#freed + 1] = ukey end
    else
      ok = false
    end
    if ok then
      records[#records + 1] = i
      released[tokens[i]] = (released[tokens[i]] or 0) + 1
      done[#done + 1] = ids[i]
      out[i] = 1
    end
  end
end
if #done == 0 then return out end
-- Keyed jobs in flight hold slots to free; flow keys of another type
-- (garbage) are dropped first, before any other write.
-- A route without flow control pays one EXISTS for it (bn_flow_in_use).
local keyed, route_limited = bn_flow_in_use(F)
if keyed then bn_flow_repair(F) end
-- What the jobs were goes first. At maxmemory with noeviction, Redis refuses
-- a script's commands that may grow memory only until the script's first
-- write: a call that starts by freeing memory completes whole, so acks go
-- on draining a full Redis (and free it) instead of failing on the records.
bn_drop_ended(KEYS[2], KEYS[4], done, light, heavy, freed)
local kept = {}
for _, i in ipairs(records) do
  local a = first_job + 5 * (i - 1)
  if tonumber(ARGV[a + 3]) > 0 then redis.call('SET', KEYS[6 + i], ARGV[a + 2], 'PX', ARGV[a + 3]) end
  if not only_heard or heard[i] then redis.call('PUBLISH', channels[i], ARGV[a + 2]) end
  if ended ~= KEYS[3] then kept[#kept + 1] = ARGV[a + 2] end
end
if #kept > 0 then
  -- As bn_ended, for the whole call at once.
  if not bn_type(ended, 'list') then redis.call('DEL', ended) end
  bn_sliced('RPUSH', ended, kept)
end
for token, count in pairs(released) do bn_release(KEYS[1], KEYS[5], token, count) end
local unparked = 0
if keyed then unparked = bn_flow_release_many(F, done, now) end
if route_limited then
  bn_wake(F.idle, #done, now)
elseif unparked > 0 then
  bn_wake(F.idle, unparked, now)
end
bn_count(KEYS[3], 'processed', #done)
bn_series(KEYS[6], now, 'p', #done)
bn_series_buckets(KEYS[6], now, 5, first_job - 1)
return out
