-- sched_done.lua: mark claimed ticks of schedules of one bucket enqueued:
-- each claim is cleared, its job becomes the schedule's last job, and the
-- schedule is indexed at the time it next needs a scheduler (when its next
-- tick is still the one the caller planned: a PUT that changed the plan
-- indexed it itself).
--
-- Run twice: the second run finds no claim of those ticks and writes nothing.
--
-- KEYS[1]     ZSET  ns:schedules:{sched.<b>}         the bucket's index
-- KEYS[1+i]   HASH  ns:schedule:{sched.<b>}:<id i>   the records (_schedule.lua)
-- ARGV[1]     now (unix ms)
-- then 5 values per schedule i: id; the tick (unix ms); its job id; the
--   next tick the claim set (unix ms); the index score for it (unix ms)
-- Returns: per schedule, 1 marked, 0 no such claim (done already, or the
-- schedule is gone or garbage).
local now = bn_num(ARGV[1], 'now')
local n = #KEYS - 1
if #ARGV ~= 1 + 5 * n then error('bananas: done takes 5 values per schedule') end
local idx = sc_index(KEYS[1])
local items = {}
for i = 1, n do
  local a = 1 + 5 * (i - 1)
  items[i] = {
    id = bn_str(ARGV[a + 1], 'schedule id'), tick = bn_num(ARGV[a + 2], 'tick'), job = bn_str(ARGV[a + 3], 'job id'),
    next_tick = bn_num(ARGV[a + 4], 'next tick'), score = bn_num(ARGV[a + 5], 'index score'),
  }
end

local out = {}
local nexts = {}
for i, it in ipairs(items) do
  local v = sc_fields(KEYS[i + 1], 'pend_job', 'pend_tick')
  if v ~= nil and v[2] == it.job and tonumber(v[3]) == it.tick then
    out[i] = 1
    nexts[i] = tonumber(v[1])
  else
    out[i] = 0
  end
end

for i, it in ipairs(items) do
  if out[i] == 1 then
    local key = KEYS[i + 1]
    redis.call('HDEL', key, 'pend_tick', 'pend_job')
    redis.call('HSET', key, 'last_job', it.job, 'last_fire', now)
    bn_count(key, 'fired', 1)
    if nexts[i] == it.next_tick then redis.call('ZADD', idx, it.score, it.id) end
  end
end
return out
