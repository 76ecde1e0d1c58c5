-- wf_retry.lua: run a workflow's failed and canceled steps again
-- (Store.Retry). Each gets the fresh job id the caller chose (its
-- old job's end is then stale), waits again for its predecessors, and those
-- whose predecessors all completed are marked creating and returned.
-- Completed steps keep their results and never run again. A step given ""
-- keeps its job id: its job is made again under it, which stores nothing
-- when the job is there (replayed, waiting or running).
--
-- The caller read which steps failed or were canceled; a step listed that
-- is no longer so (another retry came first) is left alone. Run twice, the
-- second call finds no listed step failed or canceled and writes nothing;
-- it returns the steps still creating.
--
-- KEYS[1]  HASH  workflow:{<id>}
-- ARGV[1]  now (unix ms)
-- ARGV[2..] step index, new job id pairs ("" keeps the step's job id: a
--          gather's, or a job the caller found may still run)
-- A wait retried is armed again: its timeout runs anew from now.
--
-- Returns  {status, due, index, job id, template, args, ...} as
--          wf_advance.lua (due: the earliest wait armed, ms, 0 none);
--          {"missing"} when there is no workflow.
local rec = KEYS[1]
local now = bn_num(ARGV[1], 'now')
if (#ARGV - 1) % 2 ~= 0 then error('bananas: retried steps must come in pairs') end
local n = wf_check(rec)
if n == nil then return {'missing'} end
wf_clock.now = now
local listed = {}
for i = 2, #ARGV, 2 do
  local k = bn_num(ARGV[i], 'step index')
  if k < 0 or k >= n then error('bananas: step ' .. k .. ' of a workflow of ' .. n) end
  listed[#listed + 1] = k
end
local reset = {}
for i, k in ipairs(listed) do
  local s = wf_state(rec, k)
  if s == 'f' or s == 'x' then
    local id = ARGV[2 * i + 1]
    if id ~= '' then redis.call('HSET', rec, 'j:' .. k, id) end
    redis.call('HSET', rec, 's:' .. k, 'w')
    redis.call('HDEL', rec, 'e:' .. k)
    reset[#reset + 1] = k
  end
end
if #reset > 0 and wf_get(rec, 'st') ~= 'completed' then
  redis.call('HSET', rec, 'st', 'running')
  redis.call('HDEL', rec, 'why', 'f')
  redis.call('PERSIST', rec)
end
table.sort(reset)
local out = {}
for _, k in ipairs(reset) do
  local p = wf_waiting(rec, k)
  redis.call('HSET', rec, 'p:' .. k, p)
  if p == 0 and wf_state(rec, k) == 'w' then wf_ready(rec, k, out) end
end
if #reset == 0 then
  for k = 0, n - 1 do
    if wf_state(rec, k) == 'c' then out[#out + 1] = k end
  end
end
return wf_ready_reply(rec, out, {wf_get(rec, 'st') or '', wf_clock.due})
