-- sched_claim.lua: claim the due ticks of schedules of one bucket, each a
-- compare-and-set on the schedule's next tick (and on its definition, by
-- its updated time), which only one of any number of schedulers wins.
-- Claimed to fire, a tick and its job id are kept as pend_tick/pend_job
-- until the job is enqueued (sched_fire.lua, in the route's slot) and
-- marked done (sched_done.lua): a scheduler that dies in between leaves
-- the claim for any other to finish (the index holds it a grace period,
-- then it is due again), and the route's own compare-and-set on the tick
-- makes finishing it twice one job. One bad record answers for itself and
-- does not stop the others.
--
-- Run twice with the same ARGV: the second run finds each next moved and
-- writes nothing.
--
-- KEYS[1]     ZSET  ns:schedules:{sched.<b>}         the bucket's index
-- KEYS[1+i]   HASH  ns:schedule:{sched.<b>}:<id i>   the records (_schedule.lua)
-- ARGV[1]     now (unix ms)
-- then 8 values per schedule i:
--   id; the next tick the caller read (unix ms): the compare; the updated
--   time it read ('' compares none); the next tick after this claim (0:
--   none left); what: fire (enqueue the tick's job), skip (the overlap
--   policy holds the tick back: counted), miss (the tick is outside the
--   catch-up window: only next moves); the tick fired or skipped (0 for a
--   miss); its job id (fire) or ''; the index score after the claim (unix ms)
-- Returns: per schedule, 'ok', or why nothing was written: 'gone' (no such
-- schedule), 'paused', 'stale' (next or the definition is no longer what
-- was read: another scheduler claimed it, or a PUT changed it), 'pending'
-- (an earlier claim is unfinished), 'garbage: ...' (not a schedule's record).
local now = bn_num(ARGV[1], 'now')
local n = #KEYS - 1
if #ARGV ~= 1 + 8 * n then error('bananas: a claim takes 8 values per schedule') end
local idx = sc_index(KEYS[1])
local items = {}
for i = 1, n do
  local a = 1 + 8 * (i - 1)
  local it = {
    id = bn_str(ARGV[a + 1], 'schedule id'), expect = bn_num(ARGV[a + 2], 'expected next tick'), ver = ARGV[a + 3],
    next_tick = bn_num(ARGV[a + 4], 'next tick'), what = ARGV[a + 5], tick = bn_num(ARGV[a + 6], 'tick'),
    job = ARGV[a + 7], score = bn_num(ARGV[a + 8], 'index score'),
  }
  if it.what ~= 'fire' and it.what ~= 'skip' and it.what ~= 'miss' then error('bananas: claim must be fire, skip or miss') end
  if it.what == 'fire' then bn_str(it.job, 'job id') end
  if it.next_tick ~= 0 and it.next_tick <= it.expect then error('bananas: the next tick must come after the claimed one') end
  items[i] = it
end

local out = {}
for i, it in ipairs(items) do
  local v, why = sc_fields(KEYS[i + 1], 'paused', 'pend_job', 'updated')
  if v == nil then
    out[i] = why
  elseif v[2] == '1' then
    out[i] = 'paused'
  elseif tonumber(v[1]) ~= it.expect or (it.ver ~= '' and (v[4] or '') ~= it.ver) then
    out[i] = 'stale'
  elseif v[3] and v[3] ~= '' then
    out[i] = 'pending'
  else
    out[i] = 'ok'
  end
end

for i, it in ipairs(items) do
  if out[i] == 'ok' then
    local key = KEYS[i + 1]
    if it.what == 'fire' then
      redis.call('HSET', key, 'next', it.next_tick, 'pend_tick', it.tick, 'pend_job', it.job, 'last_tick', it.tick)
    elseif it.what == 'skip' then
      redis.call('HSET', key, 'next', it.next_tick, 'last_skip', now)
      bn_count(key, 'skipped', 1)
    else
      redis.call('HSET', key, 'next', it.next_tick)
    end
    redis.call('ZADD', idx, it.score, it.id)
  end
end
return out
