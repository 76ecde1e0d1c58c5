-- push.lua: enqueue fresh jobs ready to run, the common enqueue: ids from
-- NewID (unique by construction), no delay, no unique key, so nothing in Redis
-- can refuse them and no job needs a check of its own. Each becomes a light
-- job (see _prelude.lua): its payload, built by the caller, in the payloads
-- hash and its id at the back of the ready list of its priority.
--
-- Idempotent: a second call with the same arguments (a client retry after the
-- reply was lost) writes nothing: if the call's last job is anywhere —
-- pending or running (payload), failed (hash) or finished (result record,
-- kept for its result TTL) — the call already ran. The last job is the last
-- of the call's to leave the ready list, so it is the likeliest still there.
--
-- KEYS[1]  LIST    route:{r}:queue:<priority>
-- KEYS[2]  HASH    route:{r}:stats
-- KEYS[3]  HASH    route:{r}:payloads
-- KEYS[4]  HASH    route:{r}:job:<last id>
-- KEYS[5]  STRING  route:{r}:result:<last id>
-- KEYS[6]  HASH    route:{r}:history:<hour of now>, the stats series (Keys.Series)
-- KEYS[7]  ZSET    route:{r}:idle   waiting workers: up to n of them are woken (bn_wake)
-- ARGV[1]  the route's wake channel, for workers that take only some tasks
--          (they wait on it rather than in the idle set)
-- ARGV[2]  1: publish on it whatever the list held (low load: saves the
--          caller a round trip); 0: only when the list was empty
-- ARGV[3]  now (unix ms), the minute the stats series counts the jobs in
-- ARGV[4..]  pairs id, payload ("name|priority|max retries|created ms|envelope")
-- Returns: 1 written, 0 already written by an earlier run of this call.
bn_str(ARGV[1], 'wake channel')
local eager = bn_num(ARGV[2], 'eager flag') == 1
local now = bn_num(ARGV[3], 'now')
local n = (#ARGV - 3) / 2
if n < 1 or n ~= math.floor(n) then error('bananas: push needs id, payload pairs') end
local ids = {}
for i = 1, n do
  ids[i] = bn_str(ARGV[2 + 2 * i], 'job id')
  bn_str(ARGV[3 + 2 * i], 'payload')
end
-- The payloads hash is checked by its first read, the ready list by the
-- first write (bn_checked): a key of another type is refused before any
-- write, at no TYPE call.
if bn_checked('payloads hash', 'hash', 'HEXISTS', KEYS[3], ids[n]) == 1 or redis.call('EXISTS', KEYS[4], KEYS[5]) > 0 then
  return 0
end

local len = 0
for first = 1, n, 200 do
  len = bn_checked('ready list', 'list', 'RPUSH', KEYS[1], unpack(ids, first, math.min(first + 199, n)))
end
for first = 4, #ARGV, 400 do
  redis.call('HSET', KEYS[3], unpack(ARGV, first, math.min(first + 399, #ARGV)))
end
bn_count(KEYS[2], 'enqueued', n)
bn_series(KEYS[6], now, 'e', n)
bn_wake(KEYS[7], n, now)
if eager or len == n then redis.call('PUBLISH', ARGV[1], '1') end
return 1
