-- progress.lua: store how far a running job has got (runtime.Progress), for
-- the run that holds its lease only: a write from a run that lost or ended
-- its lease (a late flush, a run reaped and started again elsewhere) changes
-- nothing, so a newer run's progress is never overwritten by an older one's.
-- The value names the run's attempt and lease token; readers show it only
-- while they match the job's (Queue.Lookup).
--
-- KEYS[1]  STRING  route:{r}:progress:<id>   the value, with its TTL
-- KEYS[2]  HASH    route:{r}:leases          id -> token
-- ARGV[1]  the job id
-- ARGV[2]  the run's lease token
-- ARGV[3]  the value (ProgressValue: "1|attempt|token|percent|at ms|note")
-- ARGV[4]  its TTL (ms, > 0)
-- Returns: 1 when stored, 0 when the run no longer holds the lease.
-- Twice: the second run stores the same value and TTL again.
local id = bn_str(ARGV[1], 'job id')
local token = bn_str(ARGV[2], 'lease token')
local value = bn_str(ARGV[3], 'progress value')
local ttl = bn_num(ARGV[4], 'progress ttl')
if ttl <= 0 then error('bananas: progress ttl must be positive, got ' .. ARGV[4]) end
bn_need_type(KEYS[2], 'hash', 'leases hash')
if redis.call('HGET', KEYS[2], id) ~= token then return 0 end
-- The key is the progress value's alone: one of another type (garbage) is
-- replaced, as SET does.
redis.call('SET', KEYS[1], value, 'PX', ttl)
return 1
