-- wf_created.lua: the caller made the jobs of these creating steps
-- (Queue.StepsCreated). A step no longer creating — its workflow was
-- canceled meanwhile — is returned with its job id, for the caller to
-- cancel the job it just made.
--
-- Run twice, the second call finds the steps created and writes nothing;
-- it returns the same canceled ones.
--
-- KEYS[1]  HASH  workflow:{<id>}
-- ARGV[1..] step indices
-- Returns  {job id, ...} of the steps canceled while their jobs were made
local rec = KEYS[1]
if wf_check(rec) == nil then return {} end
for i = 1, #ARGV do bn_num(ARGV[i], 'step index') end
local out = {}
for i = 1, #ARGV do
  local k = ARGV[i]
  local s = wf_state(rec, k)
  if s == 'c' then
    redis.call('HSET', rec, 's:' .. k, 'r')
  elseif s == 'x' then
    out[#out + 1] = wf_get(rec, 'j:' .. k) or ''
  end
end
return out
