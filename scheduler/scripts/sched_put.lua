-- sched_put.lua: create or change a schedule (PUT). Any number of callers
-- may put the same schedule at once: the record is one hash, and a put
-- whose plan (spec|tz|start|end) is the stored one keeps the stored next
-- tick, so N processes that each computed "the next tick after now" from
-- their own now leave one schedule with one next tick. A changed plan takes
-- the caller's next. The state (last fire, last job, counts, a claimed
-- tick) is kept either way.
--
-- Run twice with the same ARGV: the second run writes what the first did.
--
-- The schedule is indexed as due now: a scheduler (or the caller, next)
-- indexes it at the time it next needs one.
--
-- KEYS[1]  HASH  ns:schedule:{sched.<b>}:<id>   the record (_schedule.lua)
-- KEYS[2]  ZSET  ns:schedules:{sched.<b>}        the bucket's index
-- ARGV[1]  now (unix ms)
-- ARGV[2]  plan
-- ARGV[3]  next tick for a new plan (unix ms; 0: the schedule has no tick left)
-- ARGV[4]  the schedule id
-- ARGV[5..] field, value pairs of the definition: name route prio env retries
--           args spec tz jitter overlap catchup start end paused
-- Returns: 1 created, 2 changed keeping its next tick, 3 changed with a new plan.
local now = bn_num(ARGV[1], 'now')
local plan = bn_str(ARGV[2], 'plan')
local next_tick = bn_num(ARGV[3], 'next tick')
local id = bn_str(ARGV[4], 'schedule id')
if (#ARGV - 4) % 2 ~= 0 then error('bananas: schedule fields must come in pairs') end
local def = {}
for i = 5, #ARGV, 2 do def[ARGV[i]] = ARGV[i + 1] end
for _, f in ipairs({'name', 'route', 'env', 'spec'}) do bn_str(def[f], f) end
bn_prio(def['prio'], 'priority')
for _, f in ipairs({'retries', 'jitter', 'catchup', 'start', 'end'}) do
  if bn_num(def[f], f) < 0 then error('bananas: ' .. f .. ' must be >= 0') end
end
local o = def['overlap']
if o ~= 'skip' and o ~= 'buffer_one' and o ~= 'allow' and o ~= 'cancel_running' then
  error('bananas: overlap must be skip, buffer_one, allow or cancel_running, got ' .. tostring(o))
end
if def['paused'] ~= '0' and def['paused'] ~= '1' then error('bananas: paused must be 0 or 1') end
local idx = sc_index(KEYS[2])
local r = sc_record(KEYS[1])

local out = 1
local fields = {}
for k, v in pairs(def) do
  fields[#fields + 1] = k
  fields[#fields + 1] = v
end
if r == nil then
  redis.call('HSET', KEYS[1], 'created', now, 'fired', 0, 'skipped', 0, 'next', next_tick)
elseif r['plan'] == plan then
  out = 2
else
  out = 3
  redis.call('HSET', KEYS[1], 'next', next_tick)
end
redis.call('HSET', KEYS[1], 'plan', plan, 'updated', now, unpack(fields))
redis.call('ZADD', idx, now, id)
return out
