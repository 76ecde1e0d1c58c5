-- wf_advance.lua: steps' jobs ended (Store.Advance), one or more ends
-- of one workflow in one call, applied in order. Completed: the step's result
-- is kept for its successors, each successor whose last predecessor it was is
-- marked creating and returned (a gather completes at once), and the workflow
-- completes when no step is left. Failed or canceled: the workflow fails (or
-- is canceled), and every step that waited for this one is canceled at once,
-- since it can no longer run. A failed step that then completes (its dead job
-- replayed) brings those steps back.
--
-- An end of a job the step no longer has (a job id of before a retry) is
-- stale and changes nothing. Every end is checked before the first write.
-- Run twice, the second call finds each step in the state the first left and
-- writes nothing; it returns the steps still creating among the successors,
-- as the first did.
--
-- KEYS[1]  HASH  workflow:{<id>}
-- ARGV[1]  now (unix ms)
-- ARGV[2]  ms a completed workflow is kept
-- ARGV[3]  ms a failed or canceled workflow is kept
-- ARGV[4]  the workflow's channel, announced on when it ends
-- ARGV[5+5i .. 9+5i] per end: step index, the job id that ended, "d"
--          completed, "f" failed or "x" canceled, the result (d) or the
--          error (f, x), and the trail the run left ("" for none; at most
--          128 bytes without commas)
-- Returns  {status, why, own, due, index, job id, template, args, trails, ...}:
--          the workflow's status, the step that failed it ("" if none), how
--          many of the steps that follow this call marked creating (a second
--          run marks none), the earliest due time of the waits it armed (ms,
--          0 none), then each step creating among the successors;
--          {"missing"} when there is no workflow.
local rec = KEYS[1]
local now = bn_num(ARGV[1], 'now')
local keep_done = bn_num(ARGV[2], 'completed ttl')
local keep_failed = bn_num(ARGV[3], 'failed ttl')
local channel = ARGV[4]
if (#ARGV - 4) % 5 ~= 0 or #ARGV < 9 then error('bananas: step ends must come in fives') end
local n = wf_check(rec)
if n == nil then return {'missing'} end
wf_clock.now = now
for i = 5, #ARGV, 5 do
  local k = bn_num(ARGV[i], 'step index')
  if k < 0 or k >= n then error('bananas: step ' .. k .. ' of a workflow of ' .. n) end
  local how = ARGV[i + 2]
  if how ~= 'd' and how ~= 'f' and how ~= 'x' then error('bananas: step end must be d, f or x, got ' .. tostring(how)) end
  if #ARGV[i + 4] > 128 or string.find(ARGV[i + 4], ',', 1, true) then error('bananas: a trail is at most 128 bytes, without commas') end
end

-- wf_unfail brings back what failed step k's failure canceled, k having
-- completed: those steps wait again, and the workflow runs unless another
-- step failed.
local function wf_unfail(k, out)
  local stack = wf_list(wf_get(rec, 'nx:' .. k))
  while #stack > 0 do
    local m = table.remove(stack)
    if wf_state(rec, m) == 'x' and wf_get(rec, 'st') ~= 'canceled' then
      redis.call('HSET', rec, 's:' .. m, 'w', 'p:' .. m, wf_waiting(rec, m))
      redis.call('HDEL', rec, 'e:' .. m)
      for _, x in ipairs(wf_list(wf_get(rec, 'nx:' .. m))) do stack[#stack + 1] = x end
    end
  end
  for _, m in ipairs(wf_list(wf_get(rec, 'nx:' .. k))) do
    if wf_state(rec, m) == 'w' and wf_waiting(rec, m) == 0 then wf_ready(rec, m, out) end
  end
  if wf_get(rec, 'st') == 'failed' then
    local other = nil
    for i = 0, n - 1 do
      if wf_state(rec, i) == 'f' then other = i break end
    end
    if other == nil then
      redis.call('HSET', rec, 'st', 'running')
      redis.call('HDEL', rec, 'why', 'f')
      redis.call('PERSIST', rec)
    else
      redis.call('HSET', rec, 'why', other)
    end
  end
end

-- wf_end applies one end of step k's job: the steps it marks creating go
-- in out, those of a step already completed found creating in again.
local again = {}
local function wf_end(k, job, how, value, trail, out)
  local f = redis.call('HMGET', rec, 'j:' .. k, 'v:' .. k, 's:' .. k)
  if f[1] ~= job or f[2] == '1' then return end -- stale
  local s = f[3]
  if not s or not wf_states[s] then s = '?' end
  if how == 'd' and s ~= 'd' then
    if trail ~= '' then redis.call('HSET', rec, 'h:' .. k, trail, 'ht', '1') end
    wf_complete(rec, k, value, out, s ~= 'r' and s ~= 'c')
    if s == 'f' then wf_unfail(k, out) end
    wf_finish(rec, now, keep_done, channel)
  elseif how ~= 'd' and (s == 'r' or s == 'c') then
    local label = wf_get(rec, 'l:' .. k) or tostring(k)
    redis.call('HSET', rec, 's:' .. k, how, 'e:' .. k, value)
    wf_cancel_below(rec, k, 'canceled: step ' .. label .. (how == 'f' and ' failed' or ' was canceled'))
    if wf_get(rec, 'st') == 'running' then
      redis.call('HSET', rec, 'st', how == 'f' and 'failed' or 'canceled', 'why', k, 'f', now)
      redis.call('PEXPIRE', rec, keep_failed)
      redis.call('PUBLISH', channel, 'ended')
    end
  elseif how == 'd' then
    for _, m in ipairs(wf_list(wf_get(rec, 'nx:' .. k))) do
      if wf_state(rec, m) == 'c' then again[#again + 1] = m end
    end
  end
end

local out = {}
for i = 5, #ARGV, 5 do
  wf_end(tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], out)
end
-- A step is returned once, however many of its predecessors' ends came in
-- this call: first those this call marked creating, then those it found so.
local seen, ready = {}, {}
for _, m in ipairs(out) do
  if not seen[m] and wf_state(rec, m) == 'c' then
    seen[m] = true
    ready[#ready + 1] = m
  end
end
local own = #ready
for _, m in ipairs(again) do
  if not seen[m] and wf_state(rec, m) == 'c' then
    seen[m] = true
    ready[#ready + 1] = m
  end
end
return wf_ready_reply(rec, ready, {wf_get(rec, 'st') or '', wf_get(rec, 'why') or '', own, wf_clock.due})
