-- wf_submit.lua: store a new workflow, every step at once (Queue.SubmitWorkflow).
-- The caller gives the steps without predecessors as creating, and makes
-- their jobs; until it says they are made (wf_created.lua) the keeper makes
-- them again should the caller die (a job id is fixed here, so making it
-- twice makes it once).
--
-- Run twice, the second call finds the workflow stored and writes nothing;
-- it returns the steps still creating, as the first did.
--
-- KEYS[1]  HASH  workflow:{<id>}
-- ARGV[1]  now (unix ms)
-- ARGV[2]  n, the number of steps
-- ARGV[3]  the final step's index
-- ARGV[4..] field, value pairs: the steps' fields, as _workflow.lua lists them
-- Returns  {"new"} for a workflow stored now; {"stored", index, job id,
--          template, args, ...} with each step still creating for one stored
--          before.
local rec = KEYS[1]
local now = bn_num(ARGV[1], 'now')
local n = bn_num(ARGV[2], 'n')
local fin = bn_num(ARGV[3], 'final step')
if n < 1 or fin < 0 or fin >= n then error('bananas: workflow of ' .. n .. ' steps, final ' .. fin) end
if (#ARGV - 3) % 2 ~= 0 then error('bananas: step fields must come in pairs') end

local stored = wf_check(rec)
if stored ~= nil then
  local out = {}
  for k = 0, stored - 1 do
    if wf_state(rec, k) == 'c' then out[#out + 1] = k end
  end
  return wf_ready_reply(rec, out, {'stored'})
end
if redis.call('EXISTS', rec) == 1 then error('bananas: workflow key (' .. rec .. ') holds a hash that is not a workflow') end

for i = 4, #ARGV, 2000 do
  local last = math.min(i + 1999, #ARGV)
  redis.call('HSET', rec, unpack(ARGV, i, last))
end
redis.call('HSET', rec, 'st', 'running', 'n', n, 'fin', fin, 'left', n, 'c', now)
return {'new'}
