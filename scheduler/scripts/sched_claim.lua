-- sched_claim.lua: claim the due tick of a schedule, in the schedule's own
-- slot: compare-and-set on its next tick, which only one of any number of
-- schedulers wins. Claimed to fire, the tick and its job id are kept as
-- pend_tick/pend_job until the job is enqueued (sched_fire.lua, in the
-- route's slot) and marked done (sched_done.lua): a scheduler that dies in
-- between leaves the claim for any other to finish, and the route's own
-- compare-and-set on the tick makes finishing it twice one job.
--
-- Run twice with the same ARGV: the second run finds next moved and writes
-- nothing.
--
-- KEYS[1]  HASH  ns:schedule:{<id>}   the record (_schedule.lua)
-- ARGV[1]  the next tick the caller read (unix ms): the compare
-- ARGV[2]  the schedule's next tick after this claim (unix ms; 0: none left)
-- ARGV[3]  what to do: fire (enqueue the tick's job), skip (the overlap
--          policy holds the tick back: counted), miss (the tick is outside
--          the catch-up window: only next moves)
-- ARGV[4]  the tick (unix ms) being fired or skipped; 0 for a miss
-- ARGV[5]  the tick's job id (fire), else ''
-- ARGV[6]  now (unix ms)
-- Returns: 'ok', or why nothing was written: 'gone' (no such schedule),
-- 'paused', 'stale' (next is no longer ARGV[1]: another scheduler claimed
-- it, or a PUT changed the plan), 'pending' (an earlier claim is unfinished).
local expect = bn_num(ARGV[1], 'expected next tick')
local next_tick = bn_num(ARGV[2], 'next tick')
local what = ARGV[3]
if what ~= 'fire' and what ~= 'skip' and what ~= 'miss' then error('bananas: claim must be fire, skip or miss') end
local tick = bn_num(ARGV[4], 'tick')
if what == 'fire' then bn_str(ARGV[5], 'job id') end
local now = bn_num(ARGV[6], 'now')
if next_tick ~= 0 and next_tick <= expect then error('bananas: the next tick must come after the claimed one') end
local r = sc_record(KEYS[1])
if r == nil then return 'gone' end
if r['paused'] == '1' then return 'paused' end
if tonumber(r['next']) ~= expect then return 'stale' end
if r['pend_job'] and r['pend_job'] ~= '' then return 'pending' end

redis.call('HSET', KEYS[1], 'next', next_tick)
if what == 'fire' then
  redis.call('HSET', KEYS[1], 'pend_tick', tick, 'pend_job', ARGV[5], 'last_tick', tick)
elseif what == 'skip' then
  redis.call('HSET', KEYS[1], 'last_skip', now)
  bn_count(KEYS[1], 'skipped', 1)
end
return 'ok'
