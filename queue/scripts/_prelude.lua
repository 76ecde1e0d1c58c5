-- _prelude.lua is prepended to every script of this folder when it is loaded.
-- It holds the argument checks and the two endings every failure path shares, so
-- that each transition script validates all of its input before its first write.

local function bn_num(v, what)
  local n = tonumber(v)
  if n == nil then
    error('bananas: ' .. what .. ' must be a number, got ' .. tostring(v))
  end
  return n
end

local function bn_str(v, what)
  if v == nil or v == false or v == '' then
    error('bananas: ' .. what .. ' must not be empty')
  end
  return v
end

-- bn_type reports whether key holds a value of type want ('hash', 'zset',
-- 'list', 'string') or nothing at all. Scripts check the keys they read before
-- their first write: a key of the wrong type (written by hand, by a foreign
-- tool) would otherwise raise WRONGTYPE half-way through, after writes Redis
-- does not roll back.
local function bn_type(key, want)
  local t = redis.call('TYPE', key)
  if type(t) == 'table' then t = t['ok'] end
  return t == want or t == 'none'
end

-- bn_need_type raises, before any write, when key holds another type than want.
local function bn_need_type(key, want, what)
  if not bn_type(key, want) then
    error('bananas: ' .. what .. ' (' .. key .. ') is not a ' .. want)
  end
end

-- bn_count adds n to a counter of a stats hash and never raises: a counter
-- that is not an integer (garbage), or a stats key of another type, is reset
-- to n. Counters are for metrics; a scrambled one must not fail the
-- transition it counts, which has already written.
local function bn_count(stats, field, n)
  local r = redis.pcall('HINCRBY', stats, field, n)
  if type(r) == 'table' and r['err'] then
    if not bn_type(stats, 'hash') then redis.call('DEL', stats) end
    redis.call('HSET', stats, field, n)
  end
end

local bn_prios = { high = 1, normal = 2, low = 3 }

local function bn_prio(v, what)
  if bn_prios[v] == nil then
    error('bananas: ' .. what .. ' must be high, normal or low, got ' .. tostring(v))
  end
  return bn_prios[v]
end

-- bn_push appends id to a ready list and reports whether the list was empty,
-- which is when idle workers must be woken (a non-empty list has a taker already).
local function bn_push(list, id, front)
  local n
  if front then n = redis.call('LPUSH', list, id) else n = redis.call('RPUSH', list, id) end
  return n == 1
end

-- bn_settle ends one failed run of a job whose fence the caller has already
-- checked: either back to the scheduled set for a retry at retry_at, or into the
-- dead set with its failure record stored and announced. A retry is announced on
-- the schedule channel so a sleeping promoter wakes for it. Returns 1 (retry) or 2 (dead).
local function bn_settle(job, scheduled, dead, result, stats, id, now, msg, retry_at, force_dead, record, ttl, channel, sched_channel)
  local attempts = tonumber(redis.call('HGET', job, 'a') or '0') + 1
  local max = tonumber(redis.call('HGET', job, 'm') or '0')
  bn_count(stats, 'failed', 1)
  if force_dead == 0 and attempts <= max then
    redis.call('HSET', job, 'a', attempts, 'err', msg, 's', 'q')
    redis.call('ZADD', scheduled, retry_at, id)
    bn_count(stats, 'retried', 1)
    redis.call('PUBLISH', sched_channel, tostring(retry_at))
    return 1
  end
  redis.call('HSET', job, 'a', attempts, 'err', msg, 's', 'x', 'f', now)
  redis.call('ZADD', dead, now, id)
  redis.call('SET', result, record, 'PX', ttl)
  bn_count(stats, 'dead', 1)
  redis.call('PUBLISH', channel, record)
  return 2
end

-- bn_write_job creates a job hash: its small fields, then the envelope cut into
-- fields e0, e1, ... of at most 60 bytes. Redis keeps a hash compact (listpack)
-- only while every value is at most 64 bytes (hash-max-listpack-value); a
-- whole 100-byte envelope would make every job a full hashtable, about twice
-- the memory. HSET goes out in slices so a large envelope never overflows the
-- Lua stack.
local function bn_write_job(job, small, env)
  local fields = small
  local k = 0
  for off = 1, #env, 60 do
    fields[#fields + 1] = 'e' .. k
    fields[#fields + 1] = string.sub(env, off, off + 59)
    k = k + 1
    if #fields >= 200 then
      redis.call('HSET', job, unpack(fields))
      fields = {}
    end
  end
  if #fields > 0 then redis.call('HSET', job, unpack(fields)) end
end

-- bn_sliced calls cmd on key with items, at most 200 of them per call: one
-- call for many members instead of one per member, without overflowing the
-- Lua stack on a large batch. Keep items in pairs where cmd wants pairs.
local function bn_sliced(cmd, key, items)
  for first = 1, #items, 200 do
    redis.call(cmd, key, unpack(items, first, math.min(first + 199, #items)))
  end
end

-- A job enqueued ready to run is "light": it has no hash of its own while it
-- waits and runs. Its id goes in the ready list and its payload in one field
-- of the route's payloads hash (route:{r}:payloads, id -> payload), which costs
-- one field instead of a key, a hash and eight fields per job. The payload is
--   name|priority|max retries|created ms|envelope
-- (names and priorities never hold '|'; the envelope is last, so it may). A
-- light job gets a hash (bn_materialize) only when it fails or its lease is
-- lost; a success leaves just its result record.

-- bn_payload builds the payload of a light job.
local function bn_payload(name, prio, max, created, env)
  return name .. '|' .. prio .. '|' .. max .. '|' .. created .. '|' .. env
end

-- bn_split splits a payload into name, priority, max retries, created and
-- envelope; nil when it is not one (a value planted by hand).
local function bn_split(p)
  local i1 = string.find(p, '|', 1, true)
  local i2 = i1 and string.find(p, '|', i1 + 1, true)
  local i3 = i2 and string.find(p, '|', i2 + 1, true)
  local i4 = i3 and string.find(p, '|', i3 + 1, true)
  if not i4 then return nil end
  return string.sub(p, 1, i1 - 1), string.sub(p, i1 + 1, i2 - 1), string.sub(p, i2 + 1, i3 - 1),
    string.sub(p, i3 + 1, i4 - 1), string.sub(p, i4 + 1)
end

-- bn_materialize gives a light job its hash, from its payload, and removes the
-- payload, so that retries, the dead-letter set and replay see one kind of job.
-- A payload that does not split is kept whole as the envelope (the worker will
-- report it undecodable) rather than lost.
local function bn_materialize(job, payloads, id, payload)
  local name, prio, max, created, env = bn_split(payload)
  if not name or bn_prios[prio] == nil or tonumber(max) == nil then
    name, prio, max, created, env = '?', 'normal', '0', '0', payload
  end
  redis.call('HDEL', payloads, id)
  bn_write_job(job, {'n', name, 'p', prio, 'm', max, 'c', created}, env)
end

-- Leases are kept per fetch call, a lease group: the active set holds each
-- group's token with its deadline, the groups hash how many of its jobs are
-- still leased, and the leases hash each leased job's token. One ZADD per
-- fetch call instead of one member per job (a zset of up to 128 members is a
-- listpack, where every insert is a scan and a memmove: 2.4 µs a member).

-- bn_release ends count leases of group token: when none is left, the group
-- leaves the active set.
local function bn_release(active, groups, token, count)
  if redis.call('HINCRBY', groups, token, -count) <= 0 then
    redis.call('HDEL', groups, token)
    redis.call('ZREM', active, token)
  end
end
