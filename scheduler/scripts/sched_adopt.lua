-- sched_adopt.lua: take in a schedule's record read from the single index
-- that schedules had before their buckets (ns:schedules, a record at
-- ns:schedule:{<id>}): in the bucket's slot, the record is written with
-- the fields read and indexed as due now, so a scheduler reads it, indexes
-- it at its next tick (or finishes the claim it holds). A record already in
-- the bucket (moved before, or put since) is kept as it is.
-- sched_forget.lua then removes the old one, in its own slot.
--
-- Run twice with the same ARGV: the second run finds the record and writes
-- nothing.
--
-- KEYS[1]  HASH  ns:schedule:{sched.<b>}:<id>   the record (_schedule.lua)
-- KEYS[2]  ZSET  ns:schedules:{sched.<b>}        the bucket's index
-- ARGV[1]  now (unix ms)
-- ARGV[2]  the schedule id
-- ARGV[3..] field, value pairs of the old record (HGETALL)
-- Returns: 1 taken in, 0 the bucket holds the record already.
local now = bn_num(ARGV[1], 'now')
local id = bn_str(ARGV[2], 'schedule id')
if (#ARGV - 2) % 2 ~= 0 or #ARGV < 4 then error('bananas: an adopted record takes field, value pairs') end
local rec = {}
for i = 3, #ARGV, 2 do rec[ARGV[i]] = ARGV[i + 1] end
if not rec['next'] or not string.find(rec['next'], '^%d+$') then
  error('bananas: the old record of schedule ' .. id .. ' is garbage: its next tick ' .. tostring(rec['next']) .. ' is not a number')
end
for _, f in ipairs({'name', 'route', 'env', 'spec'}) do bn_str(rec[f], 'old record ' .. f) end
local idx = sc_index(KEYS[2])
if sc_record(KEYS[1]) ~= nil then return 0 end
bn_sliced('HSET', KEYS[1], {unpack(ARGV, 3)})
redis.call('ZADD', idx, now, id)
return 1
