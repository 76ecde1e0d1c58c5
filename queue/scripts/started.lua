-- started.lua: a fetched job starts, and a unique key it holds until started
-- is freed (see _unique.lua). The worker's fetch runs it for each job it
-- read with such a key (Jobs.Fetch), before the job's handler runs, so the
-- key is free from the job's first start on. Fenced like ack: only while the
-- caller's token is still the job's lease. A crash between the fetch and
-- this script leaves the key with its job, which is leased: the job's next
-- start, or its end, frees it. Run twice, the second call finds the key free
-- (or another job's) and writes nothing.
--
-- KEYS[1]  HASH    route:{r}:leases
-- KEYS[2]  HASH    route:{r}:job:<id>
-- KEYS[3]  STRING  route:{r}:unique:<u>, the key the job names (its field u,
--          or its payload for a light job)
-- KEYS[4]  HASH    route:{r}:payloads
-- ARGV[1]  id
-- ARGV[2]  fencing token of the dispatch
-- Returns: 1 the key was freed, 0 nothing written (stale token, a key held
--          until later, or a key not held by this job).
local id = bn_str(ARGV[1], 'job id')
local token = bn_str(ARGV[2], 'token')
if KEYS[3] == KEYS[2] then error('bananas: started needs the job\'s unique key') end
if bn_checked('leases hash', 'hash', 'HGET', KEYS[1], id) ~= token then return 0 end
if not bn_unique_ends(KEYS[2], KEYS[3], id, 'started', KEYS[4]) then return 0 end
redis.call('DEL', KEYS[3])
return 1
