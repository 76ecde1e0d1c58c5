-- sched_release.lua: make the jobs of ticks claimed ahead ready at their
-- run-at, in the route's slot. sched_fire.lua wrote each one scheduled at
-- its run-at plus a fallback delay (ScheduleRunner's releaseFallback), so
-- that the promoter moves it only if the runner that wrote it did not live
-- to release it; the runner releases it here at its run-at, without the
-- promoter's per-job reads: a job moves only while it is still in the
-- scheduled set at the exact score it was written with (a job withdrawn,
-- promoted, or back for a retry at another time is left alone), and only
-- once its run-at has come.
--
-- Run twice with the same ARGV: the second run finds the jobs gone from the
-- scheduled set and writes nothing.
--
-- KEYS[1]  ZSET  route:{r}:scheduled    id -> score
-- KEYS[2]  LIST  route:{r}:queue:high
-- KEYS[3]  LIST  route:{r}:queue:normal
-- KEYS[4]  LIST  route:{r}:queue:low
-- KEYS[5]  ZSET  route:{r}:idle         waiting workers: some are woken (bn_wake)
-- ARGV[1]  now (unix ms)
-- ARGV[2]  the route's wake channel
-- then 4 values per job: its id; its run-at (unix ms); the score it was
--   written with (unix ms); its priority (high|normal|low)
-- Returns: how many jobs were made ready.
local now = bn_num(ARGV[1], 'now')
bn_str(ARGV[2], 'wake channel')
local n = (#ARGV - 2) / 4
if n ~= math.floor(n) then error('bananas: a release takes 4 values per job') end
local lists = {high = KEYS[2], normal = KEYS[3], low = KEYS[4]}
bn_need_type(KEYS[1], 'zset', 'scheduled set')
for _, list in pairs(lists) do bn_need_type(list, 'list', 'ready list') end
local items = {}
for i = 1, n do
  local a = 2 + 4 * (i - 1)
  local it = {id = bn_str(ARGV[a + 1], 'job id'), run_at = bn_num(ARGV[a + 2], 'run-at'), score = bn_num(ARGV[a + 3], 'score'), prio = ARGV[a + 4]}
  bn_prio(it.prio, 'priority')
  items[i] = it
end

local gone, ready = {}, {high = {}, normal = {}, low = {}}
for _, it in ipairs(items) do
  local s = redis.call('ZSCORE', KEYS[1], it.id)
  if s and tonumber(s) == it.score and it.run_at <= now then
    gone[#gone + 1] = it.id
    local r = ready[it.prio]
    r[#r + 1] = it.id
  end
end
if #gone == 0 then return 0 end
bn_sliced('ZREM', KEYS[1], gone)
for prio, ids in pairs(ready) do
  if #ids > 0 then bn_sliced('RPUSH', lists[prio], ids) end
end
bn_wake(KEYS[5], #gone, now)
redis.call('PUBLISH', ARGV[2], '1')
return #gone
