-- sched_done.lua: mark a claimed tick's job enqueued: the claim is cleared
-- and the job becomes the schedule's last job.
--
-- Run twice: the second run finds no claim of that tick and writes nothing.
--
-- KEYS[1]  HASH  ns:schedule:{<id>}   the record (_schedule.lua)
-- ARGV[1]  the tick (unix ms)
-- ARGV[2]  its job id
-- ARGV[3]  now (unix ms)
-- Returns: 1 marked, 0 no such claim (done already, or the schedule is gone).
local tick = bn_num(ARGV[1], 'tick')
local id = bn_str(ARGV[2], 'job id')
local now = bn_num(ARGV[3], 'now')
local r = sc_record(KEYS[1])
if r == nil or r['pend_job'] ~= id or tonumber(r['pend_tick']) ~= tick then return 0 end
redis.call('HDEL', KEYS[1], 'pend_tick', 'pend_job')
redis.call('HSET', KEYS[1], 'last_job', id, 'last_fire', now)
bn_count(KEYS[1], 'fired', 1)
return 1
