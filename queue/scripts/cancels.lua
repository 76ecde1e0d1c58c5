-- cancels.lua: which of the given running jobs have a cancel request
-- (Queue.CancelRequests, asked by workers at each lease renewal), and drop
-- every request whose job is no longer leased. A request stands for the run
-- it was made against: a run that failed drops it (fail.lua), but a job that
-- finished otherwise (acked, or asked after its run ended) leaves its request
-- behind, and this is where it goes, so that
-- the cancels set holds at most the route's running jobs plus the requests
-- of jobs that ended since the last call. It is read whole for that reason.
-- Run twice, the second call finds nothing left to drop and answers the same.
--
-- KEYS[1]  SET   route:{r}:cancels
-- KEYS[2]  HASH  route:{r}:leases
-- ARGV[1..]  ids of running jobs (possibly none)
-- Returns: the ids of ARGV with a cancel request whose job is leased.
bn_need_type(KEYS[1], 'set', 'cancels set')
bn_need_type(KEYS[2], 'hash', 'leases hash')
if redis.call('SCARD', KEYS[1]) == 0 then return {} end
local members = redis.call('SMEMBERS', KEYS[1])
local gone = {}
for first = 1, #members, 200 do
  local held = redis.call('HMGET', KEYS[2], unpack(members, first, math.min(first + 199, #members)))
  for j = 1, #held do
    if not held[j] then gone[#gone + 1] = members[first + j - 1] end
  end
end
if #gone > 0 then bn_sliced('SREM', KEYS[1], gone) end
local out = {}
for first = 1, #ARGV, 200 do
  local last = math.min(first + 199, #ARGV)
  local asked = redis.call('SMISMEMBER', KEYS[1], unpack(ARGV, first, last))
  for j = 1, #asked do
    if asked[j] == 1 then out[#out + 1] = ARGV[first + j - 1] end
  end
end
return out
