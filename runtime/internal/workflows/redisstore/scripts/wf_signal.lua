-- wf_signal.lua: a signal reaches a workflow (Store.Signal). It completes
-- the first armed wait of its name with its payload; the steps after that
-- wait whose predecessors all completed are marked creating and returned.
-- A signal for a wait not reached yet is kept, and completes the wait when
-- it is armed (_workflow.lua's wf_ready). One signal completes one wait.
-- Refused, writing nothing: no workflow, no wait of that name, a workflow
-- that ended (completed, failed or canceled), every wait of the name
-- already given its signal, or a payload of another Go type than the
-- wait's.
--
-- Each signal has an id, the caller's: a second call with an id taken
-- (a resend after a lost reply, run twice) is answered "dup" and writes
-- nothing, so it is never a second signal.
--
-- KEYS[1]  HASH  workflow:{<id>}
-- ARGV[1]  now (unix ms)
-- ARGV[2]  ms a completed workflow is kept
-- ARGV[3]  the workflow's channel, announced on when it ends
-- ARGV[4]  the signal's name
-- ARGV[5]  the signal's id (no commas)
-- ARGV[6]  its payload (msgpack)
-- ARGV[7]  the Go type of the payload ("" unchecked)
-- Returns  {"ok", status, why, own, due, index, job id, template, args,
--          trails, ...}: a wait completed (the rest as wf_advance.lua's
--          reply, due the earliest wait armed, 0 none); {"kept"}; {"dup"};
--          or a refusal: {"missing"}, {"nowait"}, {"ended", status},
--          {"received"}, {"badtype", the wait's type}.
local rec = KEYS[1]
local now = bn_num(ARGV[1], 'now')
local keep_done = bn_num(ARGV[2], 'completed ttl')
local channel = bn_str(ARGV[3], 'channel')
local name = bn_str(ARGV[4], 'signal name')
local sig = bn_str(ARGV[5], 'signal id')
if string.find(sig, ',', 1, true) then error('bananas: a signal id holds no commas') end
local payload = ARGV[6]
local gotype = ARGV[7] or ''
local n = wf_check(rec)
if n == nil then return {'missing'} end
local waits = wf_list(wf_get(rec, 'sw:' .. name))
if #waits == 0 then return {'nowait'} end
if wf_get(rec, 'sd:' .. sig) == '1' then return {'dup'} end
local st = wf_get(rec, 'st')
if st ~= 'running' then return {'ended', st} end
local want = wf_get(rec, 'ty:' .. waits[1]) or ''
if gotype ~= '' and want ~= '' and gotype ~= want then return {'badtype', want} end
local armed, unreached = nil, 0
for _, k in ipairs(waits) do
  local s = wf_state(rec, k)
  if s == 'a' and armed == nil then armed = k end
  if s == 'w' then unreached = unreached + 1 end
end
if armed == nil then
  local kept = wf_list_ids(wf_get(rec, 'sq:' .. name))
  if unreached <= #kept then return {'received'} end
  kept[#kept + 1] = sig
  redis.call('HSET', rec, 'sq:' .. name, table.concat(kept, ','), 'sp:' .. sig, payload, 'sd:' .. sig, '1')
  return {'kept'}
end
wf_clock.now = now
local out = {}
redis.call('HSET', rec, 'sd:' .. sig, '1', 'si:' .. armed, sig, 'rv:' .. armed, now)
wf_complete(rec, armed, payload, out)
wf_finish(rec, now, keep_done, channel)
local ready = {}
for _, m in ipairs(out) do
  if wf_state(rec, m) == 'c' then ready[#ready + 1] = m end
end
return wf_ready_reply(rec, ready, {'ok', wf_get(rec, 'st') or '', wf_get(rec, 'why') or '', #ready, wf_clock.due})
