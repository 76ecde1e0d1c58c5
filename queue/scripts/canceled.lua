-- canceled.lua: finish a running job as canceled, when the worker holding it
-- honoured a cancel request (Queue.FinishCanceled): like ack.lua for one job,
-- with the caller's "canceled" record as its result. The record is stored
-- under the result key with its TTL and announced, the lease released, what
-- the job was (its payload, its job key of any type) dropped, and its cancel
-- request removed. Fenced: a token that is no longer the job's (its lease was
-- reaped or handed back) changes nothing, and so does a second run of the
-- same call: the first released the lease.
--
-- KEYS[1]  ZSET    route:{r}:active
-- KEYS[2]  HASH    route:{r}:leases
-- KEYS[3]  HASH    route:{r}:stats
-- KEYS[4]  HASH    route:{r}:payloads
-- KEYS[5]  HASH    route:{r}:groups
-- KEYS[6]  STRING  route:{r}:result:<id>
-- KEYS[7]  HASH    route:{r}:job:<id>
-- KEYS[8]  SET     route:{r}:cancels
-- KEYS[9]  HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[10] LIST    route:{r}:ended (task history), or the stats key again when the caller keeps none
-- KEYS[11] STRING  route:{r}:unique:<u>, the unique key the job holds, or the job key
--                  again when it holds none: a cancel frees a key held until started
--                  or ended (see _unique.lua)
-- KEYS[12..23]  the route's flow keys (Keys.FlowKeys): a keyed job's slot is freed
-- ARGV[1]  id
-- ARGV[2]  fencing token of the dispatch
-- ARGV[3]  result record (opaque bytes, also the pub/sub payload)
-- ARGV[4]  result ttl ms (> 0)
-- ARGV[5]  result channel
-- ARGV[6]  now (unix ms): the minute the stats series counts the cancel in
-- Returns: 1 finished as canceled, 0 stale token (nothing written).
local id = bn_str(ARGV[1], 'job id')
local token = bn_str(ARGV[2], 'token')
if bn_num(ARGV[4], 'result ttl') <= 0 then error('bananas: result ttl must be > 0') end
bn_str(ARGV[5], 'result channel')
local now = bn_num(ARGV[6], 'now')
bn_need_type(KEYS[1], 'zset', 'active set')
bn_need_type(KEYS[2], 'hash', 'leases hash')
bn_need_type(KEYS[4], 'hash', 'payloads hash')
bn_need_type(KEYS[5], 'hash', 'groups hash')
bn_need_type(KEYS[8], 'set', 'cancels set')
if redis.call('HGET', KEYS[2], id) ~= token then return 0 end
local frees = bn_unique_ends(KEYS[7], KEYS[11], id, 'canceled', KEYS[4])

local F = bn_flowkeys()
bn_flow_repair(F)
redis.call('HDEL', KEYS[2], id)
bn_release(KEYS[1], KEYS[5], token, 1)
local _, freed_held = bn_flow_release(F, id, now, false)
bn_flow_wake(F, 1, now, freed_held)
bn_end_canceled(KEYS[6], ARGV[3], ARGV[4], ARGV[5], KEYS[8], id, KEYS[3], KEYS[9], KEYS[10], now, KEYS[7], KEYS[4])
if frees then redis.call('DEL', KEYS[11]) end
return 1
