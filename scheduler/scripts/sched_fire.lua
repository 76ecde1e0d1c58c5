-- sched_fire.lua: enqueue the jobs of claimed ticks of schedules on one
-- route, in the route's slot, each exactly once: a compare-and-set on the
-- schedule's last enqueued tick (a string key beside the route's jobs),
-- and only when this call advances it, the job written and pushed to its
-- ready list. Two schedulers finishing the same claim, or a resend after a
-- lost reply, enqueue one job. One garbage tick mark answers for its own
-- schedule and does not stop the others.
--
-- The marks expire (ARGV[3]) long after any claim could still be finished,
-- so a deleted schedule leaves nothing behind for good.
--
-- A tick claimed ahead of its time (an allow schedule's, see
-- ScheduleRunner) carries a run-at still to come: its job is written
-- scheduled, in the route's scheduled set at that run-at, and the promoter
-- makes it ready then (told through the schedule channel, ARGV[4]).
--
-- KEYS[1]  HASH    route:{r}:stats
-- KEYS[2]  HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[3]  ZSET    route:{r}:idle   waiting workers: some are woken (bn_wake)
-- KEYS[4]  LIST    route:{r}:queue:high
-- KEYS[5]  LIST    route:{r}:queue:normal
-- KEYS[6]  LIST    route:{r}:queue:low
-- KEYS[7]  ZSET    route:{r}:scheduled   id -> run-at
-- then for each tick i:
-- KEYS[6+2i]  STRING  route:{r}:schedtick:<schedule id>   last enqueued tick (unix ms)
-- KEYS[7+2i]  HASH    route:{r}:job:<id>                  the tick's job
-- ARGV[1]  now (unix ms)
-- ARGV[2]  the route's wake channel, for workers that take only some tasks
-- ARGV[3]  the marks' TTL (ms)
-- ARGV[4]  the schedule channel (published with the earliest run-at written)
-- then 8 values per tick i: the tick (unix ms); the job id; the task name;
--   the envelope (msgpack); the priority (high|normal|low); max retries;
--   the schedule id (for errors); the run-at (unix ms: the tick plus its
--   jitter; at or before now, the job is ready at once)
-- Returns: per tick, 1 enqueued, 0 this tick (or a later one) was enqueued
-- already, or 'garbage: ...' (its mark is not a tick).
local now = bn_num(ARGV[1], 'now')
bn_str(ARGV[2], 'wake channel')
local ttl = bn_num(ARGV[3], 'mark ttl')
bn_str(ARGV[4], 'schedule channel')
local n = (#KEYS - 7) / 2
if n < 0 or n ~= math.floor(n) or #ARGV ~= 4 + 8 * n then error('bananas: fire takes 2 keys and 8 values per tick') end
local lists = {high = KEYS[4], normal = KEYS[5], low = KEYS[6]}
local items = {}
for i = 1, n do
  local a = 4 + 8 * (i - 1)
  local it = {
    mark = KEYS[6 + 2 * i], job = KEYS[7 + 2 * i],
    tick = bn_num(ARGV[a + 1], 'tick'), id = bn_str(ARGV[a + 2], 'job id'), name = bn_str(ARGV[a + 3], 'task name'),
    env = bn_str(ARGV[a + 4], 'envelope'), prio = ARGV[a + 5], retries = ARGV[a + 6], sid = ARGV[a + 7],
    run_at = bn_num(ARGV[a + 8], 'run-at'),
  }
  bn_prio(it.prio, 'priority')
  if bn_num(it.retries, 'max retries') < 0 then error('bananas: max retries must be >= 0') end
  items[i] = it
end
for _, list in pairs(lists) do bn_need_type(list, 'list', 'ready list') end
bn_need_type(KEYS[7], 'zset', 'scheduled set')

local out = {}
for i, it in ipairs(items) do
  local last = redis.pcall('GET', it.mark)
  if type(last) == 'table' and last['err'] then
    out[i] = 'garbage: the tick mark of schedule ' .. it.sid .. ' (' .. it.mark .. ') is not a string'
  elseif last and not string.find(last, '^%d+$') then
    out[i] = 'garbage: the tick mark of schedule ' .. it.sid .. ' (' .. it.mark .. ') is garbage: ' .. bn_shown(last)
  elseif last and tonumber(last) >= it.tick then
    out[i] = 0
  elseif redis.call('EXISTS', it.job) == 1 then
    out[i] = 0
  else
    out[i] = 1
  end
end

local pushed, written = 0, 0
local wake = false
local later, earliest = {}, nil
for i, it in ipairs(items) do
  if out[i] == 1 then
    redis.call('SET', it.mark, it.tick, 'PX', ttl)
    bn_write_job(it.job, {'n', it.name, 'p', it.prio, 'm', it.retries, 'c', now}, it.env)
    if it.run_at > now then
      later[#later + 1] = it.run_at
      later[#later + 1] = it.id
      if earliest == nil or it.run_at < earliest then earliest = it.run_at end
    else
      if bn_push(lists[it.prio], it.id, false) then wake = true end
      pushed = pushed + 1
    end
    written = written + 1
  end
end
if #later > 0 then
  bn_sliced('ZADD', KEYS[7], later)
  redis.call('PUBLISH', ARGV[4], tostring(earliest))
end
if written > 0 then
  bn_count(KEYS[1], 'enqueued', written)
  bn_series(KEYS[2], now, 'e', written)
end
if pushed > 0 then
  bn_wake(KEYS[3], pushed, now)
  if wake then redis.call('PUBLISH', ARGV[2], '1') end
end
return out
