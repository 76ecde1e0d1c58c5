-- _workflow.lua, a shared file (a script is loaded with the shared definitions
-- it names, by queue.LoadLua: see queue/scripts.go), serves the workflow
-- scripts (wf_*.lua).
-- A workflow is one hash (queue.WorkflowKey), under the workflow's own
-- hash tag, so each of its transitions is one script on one
-- slot; its steps' jobs live on their own routes and are made by the caller
-- from what these scripts return (see store.go).
--
-- Fields: st (running|completed|failed|canceled), n (steps), fin (the final
-- step), left (steps not completed), why (the step that failed or canceled
-- the workflow), c and f (created and finished, ms); per step k (0-based,
-- predecessors before successors): l:k label, t:k template (opaque), j:k job
-- id, a:k predecessors ("0,3", in order), nx:k successors, x:k args of a
-- step without predecessors, v:k "1" for a gather (no job: its result is the
-- array of its predecessors' results), s:k state — w waiting for
-- predecessors, c creating (its job may or may not exist yet), r created, d
-- completed, f failed, x canceled —, p:k predecessors not completed, o:k
-- result, e:k error, h:k the trail its completed run left (see
-- Store.Advance); ht "1" once any step has one.
--
-- Waits (runtime.Sleep, runtime.WaitSignal) are steps without a job: w:k
-- "t" for a timer, "g" for a signal wait; dd:k its duration or timeout (ms,
-- 0: a wait without a timeout); sn:k a wait's signal name; ty:k the Go type
-- its payload decodes as ("" unchecked). Once its predecessors completed
-- (a wait has none: at submission) it is armed, state a, with du:k its due
-- time (ms; 0 none), which the keeper fires (wf_fire.lua): a timer
-- completes with its predecessor's result, a wait fails with a timeout. A
-- signal (wf_signal.lua) completes the first armed wait of its name with
-- its payload, received at rv:k, by signal si:k. Per workflow: sw:<name>
-- the wait steps of that name ("k,k"), sd:<signal id> "1" for each signal
-- taken (a resend is no second signal), sq:<name> the ids of the signals
-- kept for a wait of that name not reached yet, in order, and sp:<signal
-- id> each kept one's payload.

local wf_states = {w = true, c = true, r = true, d = true, f = true, x = true, a = true}

-- wf_clock holds the call's now (ms), which arming a wait needs, and the
-- earliest due time the call armed (0: none), for the caller to have the
-- keeper look then. A script that can arm sets now before its first write.
local wf_clock = {now = nil, due = 0}
local wf_status = {running = true, completed = true, failed = true, canceled = true}

local function wf_list(s)
  local out = {}
  if s == nil or s == false or s == '' then return out end
  for part in string.gmatch(s, '[^,]+') do
    local n = tonumber(part)
    if n ~= nil then out[#out + 1] = n end
  end
  return out
end

local function wf_get(rec, field)
  local v = redis.call('HGET', rec, field)
  if v == false then return nil end
  return v
end

-- wf_check raises, before any write, unless rec is a workflow whose fields
-- these scripts can read; returns its step count.
local function wf_check(rec)
  if not bn_type(rec, 'hash') then error('bananas: workflow key (' .. rec .. ') is not a hash') end
  local st = wf_get(rec, 'st')
  if st == nil then return nil end
  if not wf_status[st] then error('bananas: workflow ' .. rec .. ' has status ' .. tostring(st)) end
  local n = tonumber(wf_get(rec, 'n'))
  if n == nil or n < 1 then error('bananas: workflow ' .. rec .. ' has no step count') end
  return n
end

local function wf_state(rec, k)
  local s = wf_get(rec, 's:' .. k)
  if s == nil or not wf_states[s] then return '?' end
  return s
end

-- wf_array is the msgpack header of an array of n elements.
local function wf_array(n)
  if n < 16 then return string.char(0x90 + n) end
  if n < 65536 then return string.char(0xdc, math.floor(n / 256), n % 256) end
  return string.char(0xdd, math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
end

-- wf_result is step k's result as msgpack: nil (0xc0) for a step whose
-- task returns nothing.
local function wf_result(rec, k)
  local v = wf_get(rec, 'o:' .. k)
  if v == nil or v == '' then return '\192' end
  return v
end

-- wf_args is what step m runs with: its own args without predecessors,
-- one predecessor's result, or the array of several's (always an array for
-- a gather).
local function wf_args(rec, m)
  local preds = wf_list(wf_get(rec, 'a:' .. m))
  if #preds == 0 then
    local x = wf_get(rec, 'x:' .. m)
    if x == nil or x == '' then return '\192' end
    return x
  end
  if #preds == 1 and wf_get(rec, 'v:' .. m) ~= '1' then return wf_result(rec, preds[1]) end
  local parts = {wf_array(#preds)}
  for i, p in ipairs(preds) do parts[i + 1] = wf_result(rec, p) end
  return table.concat(parts)
end

-- wf_waiting counts step m's predecessors not completed (the p:k counter,
-- recounted when it is not a number).
local function wf_waiting(rec, m)
  local n = 0
  for _, p in ipairs(wf_list(wf_get(rec, 'a:' .. m))) do
    if wf_state(rec, p) ~= 'd' then n = n + 1 end
  end
  return n
end

local wf_complete

-- wf_ready starts step m, whose predecessors all completed: a gather
-- completes at once; a step with a job is marked creating and its index
-- added to out, for the caller to make its job.
local function wf_ready(rec, m, out)
  if wf_get(rec, 'v:' .. m) == '1' then
    wf_complete(rec, m, wf_args(rec, m), out)
    return
  end
  local kind = wf_get(rec, 'w:' .. m)
  if kind == 't' or kind == 'g' then
    local now = wf_clock.now
    if now == nil then error('bananas: a wait was armed by a script that gave no time') end
    if kind == 'g' then
      -- A signal kept for this wait, sent before it was reached, completes it.
      local name = wf_get(rec, 'sn:' .. m) or ''
      local kept = wf_get(rec, 'sq:' .. name)
      if kept ~= nil and kept ~= '' then
        local sig, rest = string.match(kept, '^([^,]+),?(.*)$')
        local payload = wf_get(rec, 'sp:' .. sig) or '\192'
        if rest == '' then redis.call('HDEL', rec, 'sq:' .. name) else redis.call('HSET', rec, 'sq:' .. name, rest) end
        redis.call('HDEL', rec, 'sp:' .. sig)
        redis.call('HSET', rec, 'si:' .. m, sig, 'rv:' .. m, now)
        redis.call('HDEL', rec, 'du:' .. m)
        wf_complete(rec, m, payload, out)
        return
      end
    end
    local d = tonumber(wf_get(rec, 'dd:' .. m)) or 0
    local due = 0
    if d > 0 or kind == 't' then due = now + d end
    redis.call('HSET', rec, 's:' .. m, 'a', 'du:' .. m, due)
    redis.call('HDEL', rec, 'rv:' .. m, 'si:' .. m)
    if due > 0 and (wf_clock.due == 0 or due < wf_clock.due) then wf_clock.due = due end
    return
  end
  redis.call('HSET', rec, 's:' .. m, 'c')
  out[#out + 1] = m
end

-- wf_complete records step k completed with value, and starts each
-- successor whose last predecessor it was. had_error false: the step holds
-- no error to drop (it was created, not failed or canceled).
wf_complete = function(rec, k, value, out, had_error)
  redis.call('HSET', rec, 's:' .. k, 'd', 'o:' .. k, value)
  if had_error ~= false then redis.call('HDEL', rec, 'e:' .. k) end
  local left = tonumber(wf_get(rec, 'left'))
  if left == nil then
    left = 0
    for i = 0, tonumber(wf_get(rec, 'n')) - 1 do
      if wf_state(rec, i) ~= 'd' then left = left + 1 end
    end
  else
    left = left - 1
  end
  redis.call('HSET', rec, 'left', left)
  for _, m in ipairs(wf_list(wf_get(rec, 'nx:' .. k))) do
    local p = tonumber(wf_get(rec, 'p:' .. m))
    if p == nil then p = wf_waiting(rec, m) else p = p - 1 end
    redis.call('HSET', rec, 'p:' .. m, p)
    if p <= 0 and wf_state(rec, m) == 'w' then wf_ready(rec, m, out) end
  end
end

-- wf_cancel_below marks canceled every step downstream of k that waits for
-- it: it can no longer run.
local function wf_cancel_below(rec, k, why)
  local stack = wf_list(wf_get(rec, 'nx:' .. k))
  while #stack > 0 do
    local m = table.remove(stack)
    if wf_state(rec, m) == 'w' then
      redis.call('HSET', rec, 's:' .. m, 'x', 'e:' .. m, why)
      for _, s in ipairs(wf_list(wf_get(rec, 'nx:' .. m))) do stack[#stack + 1] = s end
    end
  end
end

-- wf_trails is the trails step m's predecessors' runs left, comma-joined,
-- at most 8 (record.MaxAfterTrails) read from the first 64 predecessors: a
-- gather's predecessors stand for it.
local function wf_trails(rec, m)
  local out, looked = {}, 0
  local function add(p, depth)
    if #out >= 8 or looked >= 64 then return end
    looked = looked + 1
    if wf_get(rec, 'v:' .. p) == '1' then
      if depth < 2 then
        for _, q in ipairs(wf_list(wf_get(rec, 'a:' .. p))) do add(q, depth + 1) end
      end
      return
    end
    local h = wf_get(rec, 'h:' .. p)
    if h ~= nil and h ~= '' then out[#out + 1] = h end
  end
  for _, p in ipairs(wf_list(wf_get(rec, 'a:' .. m))) do add(p, 0) end
  return table.concat(out, ',')
end

-- wf_ready_reply is the reply entries of the steps in out: index, job id,
-- template, args and predecessors' trails of each.
local function wf_ready_reply(rec, out, reply)
  -- A workflow whose runs left no trail (no tracing) pays one HGET a call
  -- for them, however many steps the call makes.
  local traced = #out > 0 and wf_get(rec, 'ht') == '1'
  for _, m in ipairs(out) do
    reply[#reply + 1] = tostring(m)
    reply[#reply + 1] = wf_get(rec, 'j:' .. m) or ''
    reply[#reply + 1] = wf_get(rec, 't:' .. m) or ''
    reply[#reply + 1] = wf_args(rec, m)
    reply[#reply + 1] = traced and wf_trails(rec, m) or ''
  end
  return reply
end

-- wf_finish ends the workflow when nothing is left to complete: completed,
-- kept for ttl ms, and announced on channel.
local function wf_finish(rec, now, ttl, channel)
  if tonumber(wf_get(rec, 'left')) == 0 and wf_get(rec, 'st') ~= 'completed' then
    redis.call('HSET', rec, 'st', 'completed', 'f', now)
    redis.call('HDEL', rec, 'why')
    redis.call('PEXPIRE', rec, ttl)
    redis.call('PUBLISH', channel, 'completed')
  end
end

-- wf_fail_step records step k failed (how "f") or canceled ("x") with
-- value its error: every step that waited for it is canceled, and a running
-- workflow fails (or is canceled), kept for keep ms, announced on channel.
local function wf_fail_step(rec, k, how, value, now, keep, channel)
  local label = wf_get(rec, 'l:' .. k) or tostring(k)
  redis.call('HSET', rec, 's:' .. k, how, 'e:' .. k, value)
  wf_cancel_below(rec, k, 'canceled: step ' .. label .. (how == 'f' and ' failed' or ' was canceled'))
  if wf_get(rec, 'st') == 'running' then
    redis.call('HSET', rec, 'st', how == 'f' and 'failed' or 'canceled', 'why', k, 'f', now)
    redis.call('PEXPIRE', rec, keep)
    redis.call('PUBLISH', channel, 'ended')
  end
end

-- wf_list_ids splits a comma-separated list of ids.
local function wf_list_ids(s)
  local out = {}
  if s == nil or s == false or s == '' then return out end
  for part in string.gmatch(s, '[^,]+') do out[#out + 1] = part end
  return out
end
