-- sched_pause.lua: pause or resume a schedule. A paused schedule fires
-- nothing (sched_claim.lua refuses it) and keeps its next tick; resumed,
-- it fires from that tick on, as its catch-up window allows.
--
-- Run twice: the second run sets what the first did.
--
-- KEYS[1]  HASH  ns:schedule:{<id>}   the record (_schedule.lua)
-- ARGV[1]  1 pause, 0 resume
-- ARGV[2]  now (unix ms)
-- Returns: 1 done, 0 no such schedule.
local p = ARGV[1]
if p ~= '0' and p ~= '1' then error('bananas: paused must be 0 or 1') end
local now = bn_num(ARGV[2], 'now')
if sc_record(KEYS[1]) == nil then return 0 end
redis.call('HSET', KEYS[1], 'paused', p, 'updated', now)
return 1
