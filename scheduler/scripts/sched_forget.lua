-- sched_forget.lua: remove a schedule's old record (of the single index
-- schedules had before their buckets) once sched_adopt.lua took it into its
-- bucket: in the old record's slot, the record goes only while it is still
-- the one read (its updated time and next tick unchanged: a process of an
-- older version that changed it meanwhile keeps it, to be moved again).
-- The caller then drops the id from the old index (another slot).
--
-- Run twice with the same ARGV: the second run finds nothing to remove.
--
-- KEYS[1]  HASH  ns:schedule:{<id>}   the old record
-- ARGV[1]  the updated field read ('' when it had none)
-- ARGV[2]  the next field read
-- Returns: 1 removed (or gone already), 0 the record changed since it was
-- read (kept).
if not bn_type(KEYS[1], 'hash') then error('bananas: old schedule record ' .. KEYS[1] .. ' is not a hash') end
local v = redis.call('HMGET', KEYS[1], 'updated', 'next')
if v[2] and ((v[1] or '') ~= ARGV[1] or v[2] ~= ARGV[2]) then return 0 end
redis.call('DEL', KEYS[1])
return 1
