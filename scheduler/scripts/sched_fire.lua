-- sched_fire.lua: enqueue the job of one claimed tick of a schedule, in the
-- route's slot, exactly once: compare-and-set on the schedule's last
-- enqueued tick (a string key beside the route's jobs), and only when this
-- call advances it, write the job and push it to its ready list, in one
-- atomic step. Two schedulers finishing the same claim, or a resend after
-- a lost reply, enqueue one job.
--
-- The mark expires (ARGV[10]) long after any claim could still be
-- finished, so a deleted schedule leaves nothing behind for good.
--
-- KEYS[1]  STRING  route:{r}:schedtick:<schedule id>   last enqueued tick (unix ms)
-- KEYS[2]  LIST    route:{r}:queue:<priority>
-- KEYS[3]  HASH    route:{r}:stats
-- KEYS[4]  HASH    route:{r}:job:<id>      the tick's job
-- KEYS[5]  HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[6]  ZSET    route:{r}:idle   waiting workers: one is woken (bn_wake)
-- ARGV[1]  tick (unix ms)
-- ARGV[2]  now (unix ms)
-- ARGV[3]  job id
-- ARGV[4]  task name
-- ARGV[5]  envelope (msgpack)
-- ARGV[6]  priority: high|normal|low
-- ARGV[7]  max retries
-- ARGV[8]  the route's wake channel, for workers that take only some tasks
-- ARGV[9]  the schedule id (for errors)
-- ARGV[10] the mark's TTL (ms)
-- Returns: 1 enqueued, 0 this tick (or a later one) was enqueued already.
local tick = bn_num(ARGV[1], 'tick')
local now = bn_num(ARGV[2], 'now')
local id = bn_str(ARGV[3], 'job id')
bn_str(ARGV[4], 'task name')
bn_str(ARGV[5], 'envelope')
bn_prio(ARGV[6], 'priority')
if bn_num(ARGV[7], 'max retries') < 0 then error('bananas: max retries must be >= 0') end
bn_str(ARGV[8], 'wake channel')
local ttl = bn_num(ARGV[10], 'mark ttl')
bn_need_type(KEYS[1], 'string', 'schedule tick mark')
bn_need_type(KEYS[2], 'list', 'ready list')
local last = redis.call('GET', KEYS[1])
if last then
  if not string.find(last, '^%d+$') then
    error('bananas: the tick mark of schedule ' .. ARGV[9] .. ' (' .. KEYS[1] .. ') is garbage: ' .. bn_shown(last))
  end
  if tonumber(last) >= tick then return 0 end
end
if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end

redis.call('SET', KEYS[1], tick, 'PX', ttl)
bn_write_job(KEYS[4], {'n', ARGV[4], 'p', ARGV[6], 'm', ARGV[7], 'c', now}, ARGV[5])
bn_count(KEYS[3], 'enqueued', 1)
bn_series(KEYS[5], now, 'e', 1)
bn_wake(KEYS[6], 1, now)
if bn_push(KEYS[2], id, false) then redis.call('PUBLISH', ARGV[8], '1') end
return 1
