-- sched_delete.lua: delete a schedule's record and its index entry. A tick
-- claimed before the delete is still enqueued once by the scheduler that
-- claimed it; nothing after it fires.
--
-- Run twice: the second run finds nothing to delete.
--
-- KEYS[1]  HASH  ns:schedule:{sched.<b>}:<id>   the record (_schedule.lua)
-- KEYS[2]  ZSET  ns:schedules:{sched.<b>}        the bucket's index
-- ARGV[1]  the schedule id
-- Returns: 1 deleted, 0 no such schedule.
local id = bn_str(ARGV[1], 'schedule id')
local idx = sc_index(KEYS[2])
local r = sc_record(KEYS[1])
redis.call('ZREM', idx, id)
if r == nil then return 0 end
redis.call('DEL', KEYS[1])
return 1
