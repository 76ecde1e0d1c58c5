-- wf_submit.lua: store a new workflow, every step at once (Store.Submit).
-- The caller gives the steps without predecessors as creating, and makes
-- their jobs; until it says they are made (wf_created.lua) the keeper makes
-- them again should the caller die (a job id is fixed here, so making it
-- twice makes it once).
--
-- The workflow is added to the list of workflows (KEYS[2], what `app
-- workflows` pages through) in the same call, when the list lives on the
-- record's node (a single server); on a cluster, where it cannot, the
-- caller adds it before (Store.Submit) and the list drops an entry
-- whose record never came.
--
-- Run twice, the second call finds the workflow stored and writes nothing
-- (the list's ZADD NX keeps the entry it finds); it returns the steps still
-- creating, as the first did.
--
-- KEYS[1]  HASH  workflow:{<id>}
-- KEYS[2]  ZSET  workflows:all: workflow id -> created (ms); absent on a
--          cluster
-- ARGV[1]  now (unix ms)
-- ARGV[2]  n, the number of steps
-- ARGV[3]  the final step's index
-- ARGV[4]  the workflow's id
-- ARGV[5..] field, value pairs: the steps' fields, as _workflow.lua lists them
-- Returns  {"new"} for a workflow stored now; {"stored", index, job id,
--          template, args, ...} with each step still creating for one stored
--          before.
local rec = KEYS[1]
local now = bn_num(ARGV[1], 'now')
local n = bn_num(ARGV[2], 'n')
local fin = bn_num(ARGV[3], 'final step')
if n < 1 or fin < 0 or fin >= n then error('bananas: workflow of ' .. n .. ' steps, final ' .. fin) end
local id = ARGV[4]
if id == nil or id == '' then error('bananas: a workflow id is needed') end
if (#ARGV - 4) % 2 ~= 0 then error('bananas: step fields must come in pairs') end
local list = KEYS[2]
if list ~= nil then bn_need_type(list, 'zset', 'workflow list') end

local stored = wf_check(rec)
if stored ~= nil then
  local out = {}
  for k = 0, stored - 1 do
    if wf_state(rec, k) == 'c' then out[#out + 1] = k end
  end
  if list ~= nil then redis.call('ZADD', list, 'NX', wf_get(rec, 'c') or now, id) end
  return wf_ready_reply(rec, out, {'stored'})
end
if redis.call('EXISTS', rec) == 1 then error('bananas: workflow key (' .. rec .. ') holds a hash that is not a workflow') end

for i = 5, #ARGV, 2000 do
  local last = math.min(i + 1999, #ARGV)
  redis.call('HSET', rec, unpack(ARGV, i, last))
end
redis.call('HSET', rec, 'st', 'running', 'n', n, 'fin', fin, 'left', n, 'c', now)
if list ~= nil then redis.call('ZADD', list, 'NX', now, id) end
return {'new'}
