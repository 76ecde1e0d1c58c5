-- cron.lua: fire one tick of a cron entry exactly once, however many
-- schedulers try: compare-and-set on the tick in the entry's state hash, and,
-- only when this call advanced it, enqueue the tick's job — one atomic step in
-- the route's slot, so there is no lock that could expire mid-fire.
--
-- Run twice with the same tick (a client retry), the second call finds the
-- tick fired and writes nothing. State that is garbage never stops the entry:
-- a tick that is not a whole number, or a state key that is not a hash, is
-- taken as never fired and overwritten (the tick fires; the reset is noted in
-- last_error), and a run_count that is not a number restarts from 1. A ready
-- list of the wrong type raises before any write.
--
-- KEYS[1]  HASH  route:{r}:cron:<name>   tick, last_run, next_run, run_count, last_job, spec, tz
-- KEYS[2]  LIST  route:{r}:queue:<priority>
-- KEYS[3]  HASH  route:{r}:stats
-- KEYS[4]  HASH  route:{r}:job:<id>      the tick's job
-- KEYS[5]  HASH  route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[6]  ZSET  route:{r}:idle   waiting workers: one is woken (bn_wake)
-- ARGV[1]  tick (unix ms): the scheduled time being fired
-- ARGV[2]  next tick (unix ms)
-- ARGV[3]  now (unix ms)
-- ARGV[4]  job id
-- ARGV[5]  task name
-- ARGV[6]  envelope (msgpack)
-- ARGV[7]  priority: high|normal|low
-- ARGV[8]  max retries
-- ARGV[9]  the route's wake channel, for workers that take only some tasks
-- ARGV[10] spec, ARGV[11] time zone (kept for `cron list`)
-- Returns: 1 fired (job enqueued), 0 this tick (or a later one) was already fired,
-- 2 the entry is paused (paused=1, set by package scheduler's cron_pause.lua):
-- nothing written, its tick kept.
local tick = bn_num(ARGV[1], 'tick')
local next_tick = bn_num(ARGV[2], 'next tick')
local now = bn_num(ARGV[3], 'now')
local id = bn_str(ARGV[4], 'job id')
bn_str(ARGV[5], 'task name')
bn_str(ARGV[6], 'envelope')
bn_prio(ARGV[7], 'priority')
if bn_num(ARGV[8], 'max retries') < 0 then error('bananas: max retries must be >= 0') end
bn_str(ARGV[9], 'wake channel')
bn_need_type(KEYS[2], 'list', 'ready list')
local kind = bn_typeof(KEYS[1])
local last, note = -1, nil
if kind == 'hash' then
  local raw = redis.call('HGET', KEYS[1], 'tick')
  if raw and #raw <= 16 and string.find(raw, '^%-?%d+$') then
    last = tonumber(raw)
  elseif raw then
    note = 'the stored tick ' .. bn_shown(raw) .. ' was not a number; reset by this fire'
  end
elseif kind ~= 'none' then
  note = 'the state key held a ' .. kind .. ', not a hash; reset by this fire'
end
if kind == 'hash' and redis.call('HGET', KEYS[1], 'paused') == '1' then return 2 end
if last >= tick then return 0 end
if redis.call('EXISTS', KEYS[4]) == 1 then error('bananas: cron job id ' .. id .. ' already exists') end

if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'tick', tick, 'last_run', now, 'next_run', next_tick, 'last_job', id,
  'spec', ARGV[10], 'tz', ARGV[11])
bn_count(KEYS[1], 'run_count', 1)
if note then
  redis.call('HSET', KEYS[1], 'last_error', note)
else
  redis.call('HDEL', KEYS[1], 'last_error')
end
bn_write_job(KEYS[4], {'n', ARGV[5], 'p', ARGV[7], 'm', ARGV[8], 'c', now}, ARGV[6])
bn_count(KEYS[3], 'enqueued', 1)
bn_series(KEYS[5], now, 'e', 1)
bn_wake(KEYS[6], 1, now)
if bn_push(KEYS[2], id, false) then redis.call('PUBLISH', ARGV[9], '1') end
return 1
