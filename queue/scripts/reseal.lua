-- reseal.lua: replace the stored envelopes of a batch of waiting or scheduled
-- jobs of one route with the same envelopes whose args are sealed under the
-- newest key (Queue.Reseal, `app keys rotate`). Each replacement is a
-- compare-and-set: it happens only while the job's stored envelope is still
-- the exact bytes the caller read and the job is neither leased (fetched,
-- running) nor dead. A job fetched, changed, retried or removed since the
-- read is left alone, and so is every job of a second run with the same ARGV
-- (its envelope is the new bytes by then, not the old), so a resent call
-- writes nothing.
--
-- Every key's type and every entry is checked before the first write, so a
-- refusal writes nothing.
--
-- KEYS[1]     HASH  route:{r}:payloads (light jobs: id -> payload)
-- KEYS[2]     HASH  route:{r}:leases
-- KEYS[3]     ZSET  route:{r}:dead
-- KEYS[4..]   HASH  route:{r}:job:<id>, one per entry of kind "h", in ARGV order
-- ARGV[1]     n, the number of entries
-- ARGV[2..]   n entries of four values each: kind ("p" a light job's payload,
--             "h" a job hash's envelope, the concatenation of its fields
--             e0, e1, ...), id, the old bytes read (a whole payload for "p",
--             the envelope for "h"), the new bytes to write in their place
-- Returns: {resealed, left alone}
local n = bn_num(ARGV[1], 'entry count')
if n < 0 or n ~= math.floor(n) or #ARGV ~= 1 + 4 * n then
  error('bananas: reseal wants 1 + 4*n arguments for n entries, got ' .. #ARGV .. ' for n = ' .. tostring(ARGV[1]))
end
bn_need_type(KEYS[1], 'hash', 'payloads')
bn_need_type(KEYS[2], 'hash', 'leases')
bn_need_type(KEYS[3], 'zset', 'dead set')

-- Pass 1: read and decide; nothing is written.
local todo = {}
local nextkey = 4
for i = 0, n - 1 do
  local kind, id, old, new = ARGV[2 + 4 * i], bn_str(ARGV[3 + 4 * i], 'job id'), ARGV[4 + 4 * i], ARGV[5 + 4 * i]
  if new == '' then error('bananas: reseal of job ' .. id .. ': new bytes must not be empty') end
  local job
  if kind == 'h' then
    job = KEYS[nextkey]
    nextkey = nextkey + 1
    if job == nil then error('bananas: reseal: no job key for entry ' .. (i + 1)) end
  elseif kind ~= 'p' then
    error('bananas: reseal: entry kind must be p or h, got ' .. tostring(kind))
  end
  local waiting = redis.call('HEXISTS', KEYS[2], id) == 0 and not redis.call('ZSCORE', KEYS[3], id)
  if waiting and kind == 'p' then
    if redis.call('HGET', KEYS[1], id) == old then
      todo[#todo + 1] = {'p', id, new}
    end
  elseif waiting and bn_type(job, 'hash') then
    local fields = redis.call('HGETALL', job)
    local parts, dead = {}, false
    for j = 1, #fields, 2 do
      local f = fields[j]
      if f == 's' then dead = true end
      local k = string.match(f, '^e(%d+)$')
      if k then parts[tonumber(k) + 1] = fields[j + 1] end
    end
    local count = 0
    for _ in pairs(parts) do count = count + 1 end
    if not dead and count > 0 and #parts == count and table.concat(parts) == old then
      todo[#todo + 1] = {'h', job, new, count}
    end
  end
end
if nextkey ~= #KEYS + 1 then
  error('bananas: reseal: ' .. (#KEYS - 3) .. ' job keys for ' .. (nextkey - 4) .. ' job-hash entries')
end

-- Pass 2: write.
for _, t in ipairs(todo) do
  if t[1] == 'p' then
    redis.call('HSET', KEYS[1], t[2], t[3])
  else
    local gone = {}
    for k = 0, t[4] - 1 do gone[#gone + 1] = 'e' .. k end
    bn_sliced('HDEL', t[2], gone)
    bn_write_job(t[2], {}, t[3])
  end
end
return {#todo, n - #todo}
