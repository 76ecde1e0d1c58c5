-- sched_delete.lua: delete a schedule's record. A tick claimed before the
-- delete is still enqueued once by the scheduler that claimed it; nothing
-- after it fires.
--
-- Run twice: the second run finds nothing to delete.
--
-- KEYS[1]  HASH  ns:schedule:{<id>}   the record (_schedule.lua)
-- Returns: 1 deleted, 0 no such schedule.
if sc_record(KEYS[1]) == nil then return 0 end
redis.call('DEL', KEYS[1])
return 1
