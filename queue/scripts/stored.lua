-- stored.lua: drop from the head of a route's ended list the records that a
-- worker has just stored in the task history: the n it read from the head,
-- recognised by the first and the last of them. Records are unique (a job's
-- id, life and attempt, and the time it ended), so a list whose head is not
-- what the worker read has moved on without it — another worker stored and
-- dropped them (it writes the same rows, stored once), or the backlog cap
-- dropped them — and nothing is dropped. Harmless run twice: the second run
-- finds another head.
--
-- KEYS[1]  LIST  route:{r}:ended
-- ARGV[1]  n, the number of records read from the head (>= 1)
-- ARGV[2]  the first of them
-- ARGV[3]  the last of them
-- Returns: 1 when the n records were dropped, 0 when the head had moved on.
local n = bn_num(ARGV[1], 'record count')
if n < 1 then error('bananas: record count must be >= 1') end
bn_str(ARGV[2], 'first record')
bn_str(ARGV[3], 'last record')
if not bn_type(KEYS[1], 'list') then return 0 end -- garbage: the next end replaces it (bn_ended)
if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[2] or redis.call('LINDEX', KEYS[1], n - 1) ~= ARGV[3] then
  return 0
end
redis.call('LTRIM', KEYS[1], n, -1)
return 1
