-- wf_cancel.lua: cancel a workflow (Store.Cancel). Every step that
-- has not run is canceled here, armed timers and waits included (nothing
-- fires them after); the jobs of the steps created or being
-- created are returned for the caller to cancel (a running one finishes
-- canceled, and its end changes nothing more here). A completed workflow is
-- left as it is.
--
-- Run twice, the second call finds the steps canceled and writes nothing;
-- it returns the same jobs.
--
-- KEYS[1]  HASH  workflow:{<id>}
-- ARGV[1]  now (unix ms)
-- ARGV[2]  ms a canceled workflow is kept
-- ARGV[3]  the workflow's channel
-- Returns  {status, job id, ...}: the status after the call and the jobs to
--          cancel; {"missing"} when there is no workflow.
local rec = KEYS[1]
local now = bn_num(ARGV[1], 'now')
local keep = bn_num(ARGV[2], 'canceled ttl')
local n = wf_check(rec)
if n == nil then return {'missing'} end
local st = wf_get(rec, 'st')
if st == 'completed' then return {st} end
local reply = {'canceled'}
for k = 0, n - 1 do
  local s = wf_state(rec, k)
  if s == 'w' or s == 'c' or s == 'a' or s == '?' then
    redis.call('HSET', rec, 's:' .. k, 'x', 'e:' .. k, 'canceled with its workflow')
  end
  if (s == 'r' or s == 'c') and wf_get(rec, 'v:' .. k) ~= '1' then
    reply[#reply + 1] = wf_get(rec, 'j:' .. k) or ''
  end
end
if st ~= 'canceled' then
  redis.call('HSET', rec, 'st', 'canceled', 'f', now)
  redis.call('HDEL', rec, 'why')
  redis.call('PEXPIRE', rec, keep)
  redis.call('PUBLISH', ARGV[3], 'ended')
end
return reply
