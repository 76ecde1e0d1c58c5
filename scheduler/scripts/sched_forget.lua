-- sched_forget.lua: remove a schedule's record from the single index
-- schedules had before their buckets, once sched_adopt.lua took it into its
-- bucket: in the old record's slot, the record goes only while it is still
-- the one read (its updated time and next tick unchanged: a process of an
-- older version that changed it meanwhile keeps it, to be moved again),
-- and the index entry goes with it (or alone, when the record is gone).
--
-- Run twice with the same ARGV: the second run finds nothing to remove.
--
-- KEYS[1]  HASH  ns:schedule:{<id>}   the old record
-- KEYS[2]  ZSET  ns:schedules         the old single index
-- ARGV[1]  the schedule id
-- ARGV[2]  the updated field read ('' when it had none)
-- ARGV[3]  the next field read
-- Returns: 1 removed, 0 the record changed since it was read (kept).
local id = bn_str(ARGV[1], 'schedule id')
bn_need_type(KEYS[2], 'zset', 'old schedules index')
if not bn_type(KEYS[1], 'hash') then error('bananas: old schedule record ' .. KEYS[1] .. ' is not a hash') end
local v = redis.call('HMGET', KEYS[1], 'updated', 'next')
if v[2] and ((v[1] or '') ~= ARGV[2] or v[2] ~= ARGV[3]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], id)
return 1
