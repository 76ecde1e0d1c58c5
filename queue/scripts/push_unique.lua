-- push_unique.lua: enqueue fresh jobs ready to run, some or all of them with
-- a unique key: the common unique enqueue. As push.lua, each job written is
-- light (its payload in the payloads hash, its id at the back of the ready
-- list); a job with a unique key takes it (SET NX) and carries it in its
-- payload (bn_payload_unique, see _prelude.lua), so that the script that
-- ends the job frees the key without the job needing a hash of its own. A
-- job whose key is held is not written; its slot in the reply names the
-- holder.
--
-- Idempotent: a call leaves a receipt, its reply, for the receipt ttl, and
-- a second call with the same arguments (a client retry after the reply was
-- lost) answers from it and writes nothing. The ids are fresh (NewID), so no
-- job needs an id check.
--
-- KEYS[1]  LIST    route:{r}:queue:<priority>
-- KEYS[2]  HASH    route:{r}:stats
-- KEYS[3]  HASH    route:{r}:payloads
-- KEYS[4]  STRING  route:{r}:receipt:<call>   this call's reply
-- KEYS[5]  HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[6]  ZSET    route:{r}:idle   waiting workers: up to n of them are woken (bn_wake)
-- KEYS[6+i] STRING route:{r}:unique:<k_i>, job i's unique key (i = 1..n), or the
--          stats key again for a job without one
-- ARGV[1]  the route's wake channel (see push.lua)
-- ARGV[2]  1: publish on it whatever the list held; 0: only when the list was empty
-- ARGV[3]  now (unix ms)
-- ARGV[4]  receipt ttl ms (> 0)
-- ARGV[5..] per job, triples: id, payload (bn_payload_unique's for a job with a
--          unique key, bn_payload's otherwise), unique ttl ms (0: no key)
-- Returns: an array of n strings: "" for a job written, else the id of the
--          job that holds its unique key.
bn_str(ARGV[1], 'wake channel')
local eager = bn_num(ARGV[2], 'eager flag') == 1
local now = bn_num(ARGV[3], 'now')
local receipt_ttl = bn_num(ARGV[4], 'receipt ttl')
local n = (#ARGV - 4) / 3
if n < 1 or n ~= math.floor(n) or #KEYS ~= 6 + n then error('bananas: push_unique needs id, payload, ttl triples and a key per job') end
if receipt_ttl <= 0 then error('bananas: push_unique needs a receipt ttl > 0') end
local answered = bn_checked('receipt', 'string', 'GET', KEYS[4])
if answered then
  local ok, r = pcall(cjson.decode, answered)
  if ok and type(r) == 'table' then return r end
  error('bananas: receipt ' .. KEYS[4] .. ' holds no reply')
end
bn_need_type(KEYS[1], 'list', 'ready list')
bn_need_type(KEYS[3], 'hash', 'payloads hash')

-- Pass 1, reads only: every job's arguments checked.
for i = 1, n do
  local a = 2 + 3 * i
  bn_str(ARGV[a], 'job id')
  local p = bn_str(ARGV[a + 1], 'payload')
  local ukey = KEYS[6 + i]
  if bn_num(ARGV[a + 2], 'unique ttl') > 0 then
    local u = bn_split_unique(p)
    if not u or string.sub(ukey, -(#u + 8)) ~= ':unique:' .. u then
      error('bananas: a unique job\'s payload must name its unique key ' .. ukey)
    end
  elseif ukey ~= KEYS[2] then
    error('bananas: a job without a unique ttl takes the stats key as its unique key')
  end
end

-- Pass 2: each key taken (SET NX), or its holder read. A key of another
-- type (garbage) refuses the call: the keys this call took are dropped
-- again first — they did not exist before it (NX) — so the call leaves
-- nothing behind, as if it had checked every key before its first write.
local reply, took = {}, {}
for i = 1, n do
  local a = 2 + 3 * i
  local uttl = tonumber(ARGV[a + 2])
  local holder = ''
  if uttl > 0 then
    local ukey = KEYS[6 + i]
    if not redis.call('SET', ukey, ARGV[a], 'NX', 'PX', uttl) then
      local h = redis.pcall('GET', ukey)
      if type(h) ~= 'string' then
        if #took > 0 then redis.call('DEL', unpack(took)) end
        error('bananas: unique key (' .. ukey .. ') is not a string')
      end
      holder = h
    else
      took[#took + 1] = ukey
    end
  end
  reply[i] = holder
end

-- Pass 3: the list, the payloads, the counters.
local ids, pays = {}, {}
for i = 1, n do
  if reply[i] == '' then
    local a = 2 + 3 * i
    ids[#ids + 1] = ARGV[a]
    pays[#pays + 1] = ARGV[a]
    pays[#pays + 1] = ARGV[a + 1]
  end
end
if #ids > 0 then
  local len = 0
  for first = 1, #ids, 200 do
    len = redis.call('RPUSH', KEYS[1], unpack(ids, first, math.min(first + 199, #ids)))
  end
  bn_sliced('HSET', KEYS[3], pays)
  bn_count(KEYS[2], 'enqueued', #ids)
  bn_series(KEYS[5], now, 'e', #ids)
  bn_wake(KEYS[6], #ids, now)
  if eager or len == #ids then redis.call('PUBLISH', ARGV[1], '1') end
end
redis.call('SET', KEYS[4], cjson.encode(reply), 'PX', receipt_ttl)
return reply
