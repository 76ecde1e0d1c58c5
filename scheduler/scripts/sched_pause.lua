-- sched_pause.lua: pause or resume a schedule. A paused schedule fires
-- nothing (sched_claim.lua refuses it) and keeps its next tick; resumed,
-- it fires from that tick on, as its catch-up window allows. The index
-- entry moves with it: parked while paused, due at once when resumed (the
-- caller, or a scheduler, then indexes it at its next tick).
--
-- A tick claimed ahead of its time (Ahead: an allow schedule's job written
-- scheduled to run at its tick) is not to run once paused: the pause
-- returns it for the caller to withdraw (sched_withdraw.lua, in the
-- route's slot). A tick whose claim is done is put back as the next tick
-- (rewind: it fires when the schedule is resumed, and its count comes
-- off); one still claimed is dropped (another scheduler is finishing it).
--
-- Run twice: the second run sets what the first did, returns the same tick
-- to withdraw, and rewinds nothing again (next is that tick already).
--
-- KEYS[1]  HASH  ns:schedule:{sched.<b>}:<id>   the record (_schedule.lua)
-- KEYS[2]  ZSET  ns:schedules:{sched.<b>}        the bucket's index
-- ARGV[1]  1 pause, 0 resume
-- ARGV[2]  now (unix ms)
-- ARGV[3]  the schedule id
-- ARGV[4]  the index score of a paused schedule (parked)
-- Returns: 0 no such schedule; else {1}, or, pausing a schedule with a
-- tick claimed ahead, {1, its job id, the tick (unix ms), the jitter (ms),
-- drop|rewind}.
local p = ARGV[1]
if p ~= '0' and p ~= '1' then error('bananas: paused must be 0 or 1') end
local now = bn_num(ARGV[2], 'now')
local id = bn_str(ARGV[3], 'schedule id')
local parked = bn_num(ARGV[4], 'parked score')
local idx = sc_index(KEYS[2])
local r = sc_record(KEYS[1])
if r == nil then return 0 end
local out = {1}
if p == '1' then
  local job, tick, mode = sc_ahead(r, now)
  if job then
    out = {1, job, string.format('%d', tick), r['jitter'] or '0', mode}
    if mode == 'rewind' and tonumber(r['next']) > tick then
      local fired = tonumber(r['fired'] or '0') or 0
      redis.call('HSET', KEYS[1], 'next', tick)
      if fired > 0 then redis.call('HSET', KEYS[1], 'fired', fired - 1) end
    end
  end
end
redis.call('HSET', KEYS[1], 'paused', p, 'updated', now)
if p == '1' then redis.call('ZADD', idx, parked, id) else redis.call('ZADD', idx, now, id) end
return out
