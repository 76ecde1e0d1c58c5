-- sched_delete.lua: delete a schedule's record and its index entry. A tick
-- claimed before the delete is still enqueued once by the scheduler that
-- claimed it; nothing after it fires.
--
-- A tick claimed ahead of its time (Ahead) is not to run once deleted: the
-- delete returns it for the caller to withdraw (sched_withdraw.lua, drop).
--
-- Run twice: the second run finds nothing to delete (the caller withdrew
-- the tick after the first, or withdraws it again from its own answer).
--
-- KEYS[1]  HASH  ns:schedule:{sched.<b>}:<id>   the record (_schedule.lua)
-- KEYS[2]  ZSET  ns:schedules:{sched.<b>}        the bucket's index
-- ARGV[1]  the schedule id
-- ARGV[2]  now (unix ms)
-- Returns: 0 no such schedule; else {1}, or, with a tick claimed ahead,
-- {1, its job id, the tick (unix ms), the jitter (ms), 'drop'}.
local id = bn_str(ARGV[1], 'schedule id')
local now = bn_num(ARGV[2], 'now')
local idx = sc_index(KEYS[2])
local r = sc_record(KEYS[1])
redis.call('ZREM', idx, id)
if r == nil then return 0 end
redis.call('DEL', KEYS[1])
local job, tick = sc_ahead(r, now)
if job then return {1, job, string.format('%d', tick), r['jitter'] or '0', 'drop'} end
return {1}
