-- expire.lua: end jobs that did not start before their expiry (NewJob.ExpireAt)
-- with status expired: never run, never dead-lettered. A job with an expiry
-- has an entry in the route's expiry set (id -> when it expires, ms) from its
-- enqueue until it starts (fetch.lua drops the entry of each job it leases).
-- Given candidate ids (the sweep's read of the due entries, or the jobs a
-- fetch set aside: see fetch.lua), the script ends each one whose entry is
-- due: the job leaves its ready list, keyed set or the scheduled set — or
-- none, when a fetch already took it out — its payload or hash is dropped,
-- and an expired record is stored under its result key, appended to the
-- ended list (the task history), announced on its result channel (Await
-- returns ErrExpired) and counted in the route's stats (field "expired").
-- An entry whose job started (leased) or is gone is dropped alone.
--
-- An expiry ends the job as a cancel does: it frees the unique key the job
-- holds until started or ended (one held until completed stays to its
-- ttl), only while the key's value is the job's id (bn_unique_ends).
--
-- The record is built here (the caller does not know the job): a msgpack
-- map as results.Record reads it, {id, ok=false, e, t, n, p, c, m, a, xp=true,
-- ev=<the envelope>}; results.Decode takes the args, timeout and description
-- from the envelope.
--
-- Every read comes before the first write; the route keys' types are checked
-- first. Run twice, the second call finds the entries gone and writes nothing.
--
-- KEYS[1]   ZSET    route:{r}:expiry      id -> expires at (ms)
-- KEYS[2]   HASH    route:{r}:payloads
-- KEYS[3]   LIST    route:{r}:queue:high
-- KEYS[4]   LIST    route:{r}:queue:normal
-- KEYS[5]   LIST    route:{r}:queue:low
-- KEYS[6]   ZSET    route:{r}:scheduled
-- KEYS[7]   HASH    route:{r}:leases
-- KEYS[8]   HASH    route:{r}:stats
-- KEYS[9]   HASH    route:{r}:history:<hour of now> (unused: the series has no expired count; kept for the slot)
-- KEYS[10]  LIST    route:{r}:ended (task history), or the stats key again when the caller keeps none
-- KEYS[8+3i]   HASH    route:{r}:job:<id_i>     (i = 1..n)
-- KEYS[9+3i]   STRING  route:{r}:result:<id_i>
-- KEYS[10+3i]  STRING  route:{r}:unique:<u>, the unique key job i holds (its hash's field u),
--              or its job key again when it holds none
-- KEYS[11+3n..22+3n]  the route's flow keys (Keys.FlowKeys): a keyed job waits in its flow's keyed set
-- ARGV[1]  now (unix ms)
-- ARGV[2]  result ttl ms (> 0): how long the expired record is kept
-- ARGV[3]  result channel prefix (the channel is prefix .. id .. "}")
-- ARGV[3+i]  the candidate ids, matching the key triples
-- Returns: a flat array id1, name1, priority1, ... of the jobs ended expired.
local now = bn_num(ARGV[1], 'now')
local ttl = bn_num(ARGV[2], 'result ttl')
if ttl <= 0 then error('bananas: result ttl must be > 0') end
local prefix = bn_str(ARGV[3], 'result channel prefix')
local n = #ARGV - 3
if #KEYS ~= 22 + 3 * n then error('bananas: expire needs three keys per id and the flow keys') end
local F = bn_flowkeys()
bn_need_type(KEYS[1], 'zset', 'expiry set')
bn_need_type(KEYS[2], 'hash', 'payloads hash')
for k = 3, 5 do bn_need_type(KEYS[k], 'list', 'ready list') end
bn_need_type(KEYS[6], 'zset', 'scheduled set')
bn_need_type(KEYS[7], 'hash', 'leases hash')

-- msgpack encoding of the record's values.
local function mp_len(n, small, base, b8, b16, b32)
  if small and n < small then return string.char(base + n) end
  if b8 and n < 256 then return string.char(b8, n) end
  if n < 65536 then return string.char(b16, math.floor(n / 256), n % 256) end
  return string.char(b32, math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
end
local function mp_str(s) return mp_len(#s, 32, 0xa0, 0xd9, 0xda, 0xdb) .. s end
local function mp_bin(s) return mp_len(#s, nil, 0, 0xc4, 0xc5, 0xc6) .. s end
-- mp_int encodes a non-negative integer (garbage reads as 0).
local function mp_int(v)
  v = math.floor(tonumber(v) or 0)
  if v < 0 then v = 0 end
  if v < 128 then return string.char(v) end
  local b = {}
  for j = 8, 1, -1 do
    b[j] = v % 256
    v = math.floor(v / 256)
  end
  return string.char(0xcf, unpack(b))
end

local function record(id, name, prio, max, created, attempts, env)
  local parts = {mp_str('id'), mp_str(id), mp_str('ok'), '\194', mp_str('e'), mp_str('expired before it started'),
    mp_str('t'), mp_int(now), mp_str('xp'), '\195'}
  local fields = 5
  local function add(k, v)
    parts[#parts + 1] = mp_str(k)
    parts[#parts + 1] = v
    fields = fields + 1
  end
  if name and name ~= '' then add('n', mp_str(name)) end
  if prio and bn_prios[prio] then add('p', mp_str(prio)) end
  if tonumber(created) and tonumber(created) > 0 then add('c', mp_int(created)) end
  if tonumber(max) and tonumber(max) > 0 then add('m', mp_int(max)) end
  if tonumber(attempts) and tonumber(attempts) > 0 then add('a', mp_int(attempts)) end
  if env and env ~= '' then add('ev', mp_bin(env)) end
  return string.char(0x80 + fields) .. table.concat(parts)
end

-- Pass 1, reads only: what each candidate is.
local plan = {}
local ending = false
for i = 1, n do
  local id = bn_str(ARGV[3 + i], 'job id')
  local at = redis.call('ZSCORE', KEYS[1], id)
  if not at or tonumber(at) > now then
    plan[i] = false -- not due (or already ended): nothing to do
  elseif redis.call('HEXISTS', KEYS[7], id) == 1 then
    plan[i] = {id = id, drop = true} -- it started
  else
    local job = KEYS[8 + 3 * i]
    local payload = redis.call('HGET', KEYS[2], id)
    local p = {id = id, job = job, result = KEYS[9 + 3 * i]}
    if payload then
      local name, prio, max, created, env = bn_split(payload)
      if not name then name, prio, max, created, env = '?', 'normal', '0', '0', payload end
      p.name, p.prio, p.max, p.created, p.env, p.light = name, prio, max, created, env, true
      if bn_unique_ends(job, KEYS[10 + 3 * i], id, 'expired', KEYS[2]) then p.ukey = KEYS[10 + 3 * i] end
      ending = true
    elseif bn_type(job, 'hash') and redis.call('EXISTS', job) == 1 then
      local f = redis.call('HGETALL', job)
      local h = {}
      for j = 1, #f, 2 do h[f[j]] = f[j + 1] end
      local env = {}
      for k = 0, 100000 do
        if not h['e' .. k] then break end
        env[#env + 1] = h['e' .. k]
      end
      p.name, p.prio, p.max, p.created, p.attempts, p.env = h.n or '?', h.p, h.m, h.c, h.a, table.concat(env)
      if bn_unique_ends(job, KEYS[10 + 3 * i], id, 'expired', KEYS[2]) then p.ukey = KEYS[10 + 3 * i] end
      ending = true
    else
      p.drop = true -- gone: canceled, deleted, or never written
    end
    plan[i] = p
  end
end

-- Pass 2: end them.
if ending then bn_flow_repair(F) end
local out = {}
for i = 1, n do
  local p = plan[i]
  if p and p.drop then
    redis.call('ZREM', KEYS[1], p.id)
  elseif p then
    local id = p.id
    if redis.call('ZREM', KEYS[6], id) == 0 then
      local member = redis.call('HGET', F.flowof, id)
      local found = false
      if member then
        redis.call('HDEL', F.flowof, id)
        for k = 1, 3 do
          if redis.call('ZREM', F.keyed[k], member) == 1 then
            found = true
            break
          end
        end
      end
      -- In the list of its priority, or another; in none when a fetch set
      -- it aside. LREM writes only when it finds the id.
      local first = bn_prios[p.prio or ''] or 2
      if not found and redis.call('LREM', KEYS[2 + first], 1, id) == 0 then
        for k = 1, 3 do
          if k ~= first and redis.call('LREM', KEYS[2 + k], 1, id) == 1 then break end
        end
      end
    end
    if p.light then redis.call('HDEL', KEYS[2], id) else redis.call('DEL', p.job) end
    if p.ukey then redis.call('DEL', p.ukey) end
    local rec = record(id, p.name, p.prio, p.max, p.created, p.attempts, p.env)
    redis.call('SET', p.result, rec, 'PX', ttl)
    bn_ended(KEYS[10], KEYS[8], rec)
    redis.call('PUBLISH', prefix .. id .. '}', rec)
    bn_count(KEYS[8], 'expired', 1)
    redis.call('ZREM', KEYS[1], id)
    out[#out + 1] = id
    out[#out + 1] = p.name
    out[#out + 1] = p.prio or ''
  end
end
return out
