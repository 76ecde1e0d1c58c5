-- wf_created.lua: the caller made the jobs of these creating steps
-- (Store.StepsCreated). A step no longer creating — its workflow was
-- canceled meanwhile — is returned with its job id, for the caller to
-- cancel the job it just made. So is a step that has another job id by now
-- (a retry gave it a fresh one while a slow caller was still making the
-- old): the old job would be a second job of the step.
--
-- Run twice, the second call finds the steps created and writes nothing;
-- it returns the same canceled ones.
--
-- KEYS[1]  HASH  workflow:{<id>}
-- ARGV[1..] step index, the job id made for it, pairs
-- Returns  {job id, ...} of the jobs made that their steps no longer want:
--          to cancel
local rec = KEYS[1]
if (#ARGV % 2) ~= 0 then error('bananas: created steps must come in pairs') end
if wf_check(rec) == nil then return {} end
for i = 1, #ARGV, 2 do bn_num(ARGV[i], 'step index') end
local out = {}
for i = 1, #ARGV, 2 do
  local k, job = ARGV[i], ARGV[i + 1]
  local s = wf_state(rec, k)
  if wf_get(rec, 'j:' .. k) ~= job then
    if job ~= '' then out[#out + 1] = job end
  elseif s == 'c' then
    redis.call('HSET', rec, 's:' .. k, 'r')
  elseif s == 'x' then
    out[#out + 1] = job
  end
end
return out
