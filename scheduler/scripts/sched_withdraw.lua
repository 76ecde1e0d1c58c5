-- sched_withdraw.lua: withdraw the job of a tick claimed ahead (an allow
-- schedule's, written scheduled to run at its tick) when its schedule is
-- paused or deleted before the tick: in the route's slot, the job leaves
-- the scheduled set and its hash goes, if it still waits there at the
-- tick's run-at (a job promoted already, or waiting for a retry, is not
-- touched). The schedule's tick mark then says what may still fire:
--   drop    the tick is not to run: the mark is raised to it, so a claim
--           of it still unfinished (another scheduler's) enqueues nothing
--   rewind  the pause put the schedule's next tick back to this one: the
--           mark is lowered below it (when it is this tick's), so that the
--           tick fires once when the schedule is resumed
--
-- Run twice with the same ARGV: the job is gone and the mark where the
-- first run left it; nothing is written.
--
-- KEYS[1]  STRING  route:{r}:schedtick:<schedule id>   last enqueued tick (unix ms)
-- KEYS[2]  HASH    route:{r}:job:<id>                  the tick's job
-- KEYS[3]  ZSET    route:{r}:scheduled                 id -> run-at
-- ARGV[1]  now (unix ms)
-- ARGV[2]  the job id
-- ARGV[3]  the tick (unix ms)
-- ARGV[4]  the tick's run-at (unix ms)
-- ARGV[5]  drop | rewind
-- ARGV[6]  the mark's TTL (ms)
-- ARGV[7]  the score it waits at in the scheduled set (the run-at plus the
--          release fallback, sched_release.lua)
-- Returns: 1 the job was withdrawn, 0 it was not waiting (any more).
local now = bn_num(ARGV[1], 'now')
local id = bn_str(ARGV[2], 'job id')
local tick = bn_num(ARGV[3], 'tick')
local run_at = bn_num(ARGV[4], 'run-at')
local mode = ARGV[5]
local ttl = bn_num(ARGV[6], 'mark ttl')
local score = bn_num(ARGV[7], 'score')
if mode ~= 'drop' and mode ~= 'rewind' then error('bananas: withdraw must drop or rewind') end
bn_need_type(KEYS[3], 'zset', 'scheduled set')
if not bn_type(KEYS[1], 'string') then error('bananas: tick mark ' .. KEYS[1] .. ' is not a string') end
local mark = redis.call('GET', KEYS[1]) -- false when there is none
if mark and not string.find(mark, '^%d+$') then
  error('bananas: tick mark ' .. KEYS[1] .. ' is garbage: ' .. bn_shown(mark))
end
if mark then mark = tonumber(mark) else mark = nil end

local at = redis.call('ZSCORE', KEYS[3], id)
local out = 0
if at and tonumber(at) == score and run_at > now then
  redis.call('ZREM', KEYS[3], id)
  redis.call('DEL', KEYS[2])
  out = 1
end
if mode == 'drop' and (mark == nil or mark < tick) then
  redis.call('SET', KEYS[1], tick, 'PX', ttl)
elseif mode == 'rewind' and out == 1 and mark == tick then
  redis.call('SET', KEYS[1], tick - 1, 'PX', ttl)
end
return out
