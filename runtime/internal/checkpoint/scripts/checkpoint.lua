-- checkpoint.lua: save a running job's checkpoint (runtime.Checkpoint), for
-- the run that holds the job's lease only: a write from a run that lost or
-- ended its lease (a late write, a run reaped and started again elsewhere)
-- changes nothing, so a newer run's checkpoint is never overwritten by an
-- older one's. Unlike a run's progress, the value is the job's, not the
-- run's: the job's next run (after a crash, a lease loss, a hand-back or a
-- failure) reads it back (runtime.LastCheckpoint).
--
-- KEYS[1]  STRING  route:{r}:checkpoint:<id>   the value, with its TTL
-- KEYS[2]  HASH    route:{r}:leases            id -> token
-- ARGV[1]  the job id
-- ARGV[2]  the run's lease token
-- ARGV[3]  the value (opaque bytes, the caller's encoding)
-- ARGV[4]  its TTL (ms, > 0)
-- Returns: 1 when stored, 0 when the run no longer holds the lease.
-- Twice: the second run stores the same value and TTL again.
local id = bn_str(ARGV[1], 'job id')
local token = bn_str(ARGV[2], 'lease token')
local value = ARGV[3]
local ttl = bn_num(ARGV[4], 'checkpoint ttl')
if ttl <= 0 then error('bananas: checkpoint ttl must be positive, got ' .. ARGV[4]) end
bn_need_type(KEYS[2], 'hash', 'leases hash')
if redis.call('HGET', KEYS[2], id) ~= token then return 0 end
-- The key is the checkpoint's alone: one of another type (garbage) is
-- replaced, as SET does.
redis.call('SET', KEYS[1], value, 'PX', ttl)
return 1
