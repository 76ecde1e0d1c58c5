-- sched_pause.lua: pause or resume a schedule. A paused schedule fires
-- nothing (sched_claim.lua refuses it) and keeps its next tick; resumed,
-- it fires from that tick on, as its catch-up window allows. The index
-- entry moves with it: parked while paused, due at once when resumed (the
-- caller, or a scheduler, then indexes it at its next tick).
--
-- Run twice: the second run sets what the first did.
--
-- KEYS[1]  HASH  ns:schedule:{sched.<b>}:<id>   the record (_schedule.lua)
-- KEYS[2]  ZSET  ns:schedules:{sched.<b>}        the bucket's index
-- ARGV[1]  1 pause, 0 resume
-- ARGV[2]  now (unix ms)
-- ARGV[3]  the schedule id
-- ARGV[4]  the index score of a paused schedule (parked)
-- Returns: 1 done, 0 no such schedule.
local p = ARGV[1]
if p ~= '0' and p ~= '1' then error('bananas: paused must be 0 or 1') end
local now = bn_num(ARGV[2], 'now')
local id = bn_str(ARGV[3], 'schedule id')
local parked = bn_num(ARGV[4], 'parked score')
local idx = sc_index(KEYS[2])
if sc_record(KEYS[1]) == nil then return 0 end
redis.call('HSET', KEYS[1], 'paused', p, 'updated', now)
if p == '1' then redis.call('ZADD', idx, parked, id) else redis.call('ZADD', idx, now, id) end
return 1
