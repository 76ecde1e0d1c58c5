-- wf_fire.lua: fire a workflow's waits whose due time has come
-- (Store.Fire, the keeper's): a timer (runtime.Sleep) completes with its
-- predecessor's result, and the steps after it whose predecessors all
-- completed are marked creating and returned; a signal wait whose timeout
-- passed fails, with an error that names it, and fails the workflow as a
-- dead step does. A canceled or completed workflow fires nothing.
--
-- Run twice, the second call finds the waits fired and writes nothing; it
-- returns no steps (the keeper makes any the first call's lost reply left
-- creating).
--
-- KEYS[1]  HASH  workflow:{<id>}
-- ARGV[1]  now (unix ms)
-- ARGV[2]  ms a completed workflow is kept
-- ARGV[3]  ms a failed workflow is kept
-- ARGV[4]  the workflow's channel, announced on when it ends
-- Returns  {status, why, own, due, index, job id, template, args, trails,
--          ...} as wf_advance.lua, due the earliest wait this call armed
--          (ms, 0 none); {"missing"} when there is no workflow.
local rec = KEYS[1]
local now = bn_num(ARGV[1], 'now')
local keep_done = bn_num(ARGV[2], 'completed ttl')
local keep_failed = bn_num(ARGV[3], 'failed ttl')
local channel = bn_str(ARGV[4], 'channel')
local n = wf_check(rec)
if n == nil then return {'missing'} end
wf_clock.now = now
local st = wf_get(rec, 'st')
local out = {}
if st == 'running' or st == 'failed' then
  for k = 0, n - 1 do
    local f = redis.call('HMGET', rec, 's:' .. k, 'du:' .. k, 'w:' .. k)
    local due = tonumber(f[2]) or 0
    if f[1] == 'a' and due > 0 and due <= now then
      if f[3] == 't' then
        wf_complete(rec, k, wf_args(rec, k), out)
      else
        local label = wf_get(rec, 'l:' .. k) or tostring(k)
        local name = wf_get(rec, 'sn:' .. k) or ''
        local d = tonumber(wf_get(rec, 'dd:' .. k)) or 0
        wf_fail_step(rec, k, 'f', 'timeout: wait ' .. label .. ' got no signal "' .. name .. '" within ' .. d .. ' ms', now, keep_failed, channel)
      end
    end
  end
  wf_finish(rec, now, keep_done, channel)
end
local ready = {}
for _, m in ipairs(out) do
  if wf_state(rec, m) == 'c' then ready[#ready + 1] = m end
end
return wf_ready_reply(rec, ready, {wf_get(rec, 'st') or '', wf_get(rec, 'why') or '', #ready, wf_clock.due})
