-- remove.lua: delete or cancel a job by id (Queue.Delete, Queue.Cancel). A job
-- that waits — pending in a ready list, or scheduled — is taken out for good:
-- its id leaves its list or the scheduled set, and its payload (a light job)
-- or its job key (of any type) goes. A cancel also stores the caller's result
-- record under the job's result key and announces it, so that waiters wake; a
-- delete leaves no trace but its counter. A running (leased) job is not
-- touched: a cancel asks the worker holding it to stop (its id joins the
-- cancels set and is published on the route's cancel channel; the worker
-- finishes it with canceled.lua), a delete is refused. Dead and completed
-- jobs are refused, naming their state.
--
-- A unique key the job holds (KEYS[14], read by the caller from the job's
-- field u) is freed by a cancel or a delete of the waiting job when it is
-- held until started or ended and its value is still the job's id (see
-- _unique.lua); a key held until completed stays for its ttl.
--
-- The route keys' types are checked first and every read comes before the
-- first write (but the LREM that finds a pending job), so a refusal writes
-- nothing. A job in no list although it
-- has a payload or hash (garbage) is refused, not removed half-way. Run
-- twice, the second call finds the job gone: a delete then answers that there
-- is no such job, and a cancel finds its own record under the result key and
-- answers "canceled" again without writing; a cancel request is a set member,
-- added once.
--
-- KEYS[1]   HASH    route:{r}:job:<id>
-- KEYS[2]   HASH    route:{r}:payloads
-- KEYS[3]   LIST    route:{r}:queue:high
-- KEYS[4]   LIST    route:{r}:queue:normal
-- KEYS[5]   LIST    route:{r}:queue:low
-- KEYS[6]   ZSET    route:{r}:scheduled
-- KEYS[7]   HASH    route:{r}:leases
-- KEYS[8]   ZSET    route:{r}:dead
-- KEYS[9]   STRING  route:{r}:result:<id>
-- KEYS[10]  HASH    route:{r}:stats
-- KEYS[11]  SET     route:{r}:cancels
-- KEYS[12]  HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[13]  LIST    route:{r}:ended (task history), or the stats key again when the caller keeps none
-- KEYS[14]  STRING  route:{r}:unique:<u>, the unique key the job holds, or the job key again
-- KEYS[15..26]  the route's flow keys (Keys.FlowKeys): a keyed job waits in
--           its flow's keyed set (found by its flowof entry), not in a list
-- ARGV[1]  id
-- ARGV[2]  "delete" or "cancel"
-- ARGV[3]  cancel: the result record (opaque bytes) to store and announce; delete: ""
-- ARGV[4]  cancel: result ttl ms (> 0); delete: 0
-- ARGV[5]  cancel: result channel; delete: ""
-- ARGV[6]  cancel: the route's cancel channel; delete: ""
-- ARGV[7]  now (unix ms): the minute the stats series counts a cancel in
-- Returns: a pair {outcome, state}: {1, "pending" or "scheduled"} removed (a
--          cancel's record stored and announced), {1, ""} a cancel already
--          done by an earlier run of this call, {2, "processing"} a cancel
--          asked of the worker running the job, or {0, state} refused and
--          nothing written: "processing" (a delete), "dead", "completed",
--          "stranded" (a payload or hash in no list), "" no such job.
local id = bn_str(ARGV[1], 'job id')
local mode = ARGV[2]
local now = bn_num(ARGV[7], 'now')
if mode ~= 'delete' and mode ~= 'cancel' then error('bananas: mode must be delete or cancel, got ' .. tostring(mode)) end
local cancel = mode == 'cancel'
if cancel then
  if bn_num(ARGV[4], 'result ttl') <= 0 then error('bananas: result ttl must be > 0') end
  bn_str(ARGV[5], 'result channel')
  bn_str(ARGV[6], 'cancel channel')
end
bn_need_type(KEYS[2], 'hash', 'payloads hash')
for k = 3, 5 do bn_need_type(KEYS[k], 'list', 'ready list') end
bn_need_type(KEYS[6], 'zset', 'scheduled set')
bn_need_type(KEYS[7], 'hash', 'leases hash')
bn_need_type(KEYS[8], 'zset', 'dead-letter set')
bn_need_type(KEYS[11], 'set', 'cancels set')

if redis.call('HEXISTS', KEYS[7], id) == 1 then
  if not cancel then return {0, 'processing'} end
  redis.call('SADD', KEYS[11], id)
  redis.call('PUBLISH', ARGV[6], id)
  return {2, 'processing'}
end
if redis.call('ZSCORE', KEYS[8], id) then return {0, 'dead'} end

local kind = bn_typeof(KEYS[1])
local payload = redis.call('HGET', KEYS[2], id)
local frees = bn_unique_ends(KEYS[1], KEYS[14], id, 'canceled', KEYS[2])
local state, list
if redis.call('ZSCORE', KEYS[6], id) then
  state = 'scheduled'
elseif payload or kind == 'hash' then
  -- Pending: in the list of its priority, or, when that does not read (or
  -- does not hold it), in another.
  local p
  if payload then
    local _, pp = bn_split(payload)
    p = pp
  else
    p = redis.call('HGET', KEYS[1], 'p')
  end
  local F = bn_flowkeys()
  bn_flow_repair(F)
  local member = redis.call('HGET', F.flowof, id)
  if member then
    for i = 1, 3 do
      if redis.call('ZREM', F.keyed[i], member) == 1 then
        list = F.keyed[i]
        redis.call('HDEL', F.flowof, id)
        break
      end
    end
  end
  local order = {}
  if list then order = {} elseif p and bn_prios[p] then order[1] = bn_prios[p] end
  for i = 1, 3 do
    if not list and i ~= order[1] then order[#order + 1] = i end
  end
  -- LREM writes only when it finds the id: a job in no list is refused
  -- with nothing written.
  for _, i in ipairs(order) do
    if redis.call('LREM', KEYS[2 + i], 1, id) == 1 then
      list = KEYS[2 + i]
      break
    end
  end
  if not list then return {0, 'stranded'} end
  state = 'pending'
elseif redis.call('EXISTS', KEYS[9]) == 1 then
  if cancel and bn_type(KEYS[9], 'string') and redis.call('GET', KEYS[9]) == ARGV[3] then return {1, ''} end
  return {0, 'completed'}
else
  return {0, ''}
end

if state == 'scheduled' then redis.call('ZREM', KEYS[6], id) end
if payload then redis.call('HDEL', KEYS[2], id) end
if kind ~= 'none' then redis.call('DEL', KEYS[1]) end
if frees then redis.call('DEL', KEYS[14]) end
if cancel then
  bn_end_canceled(KEYS[9], ARGV[3], ARGV[4], ARGV[5], nil, id, KEYS[10], KEYS[12], KEYS[13], now)
else
  bn_count(KEYS[10], 'deleted', 1)
end
return {1, state}
