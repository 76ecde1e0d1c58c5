-- once_done.lua: record that the side effect of runtime.Once succeeded: set
-- its marker for ttl ms (when the effect was done, ms), drop the caller's
-- claim and announce it on the once channel, where waiting callers learn
-- that they have nothing to run.
--
-- The marker is set whether or not the caller still holds the claim: the
-- effect happened either way, and a caller whose claim ran out (paused past
-- it) and was taken by another has done it all the same. A marker already
-- there is kept as it is, its expiry included.
--
-- Harmless twice: a second run finds the marker set and the claim gone, and
-- writes nothing.
--
-- A marker key of another type (garbage) is an error raised before any write;
-- a claim key of another type is left alone.
--
-- KEYS[1]  STRING  once:{h}:done
-- KEYS[2]  STRING  once:{h}:claim
-- ARGV[1]  the caller's token
-- ARGV[2]  marker ttl ms (> 0)
-- ARGV[3]  now (unix ms): the marker's value
-- ARGV[4]  the once channel
-- Returns: 1 the marker was set now, 0 it was set already.
local token = bn_str(ARGV[1], 'once token')
local ttl = bn_num(ARGV[2], 'once marker ttl')
if ttl <= 0 then error('bananas: once marker ttl must be a positive number of ms') end
local now = bn_num(ARGV[3], 'now')
local channel = bn_str(ARGV[4], 'once channel')
bn_need_type(KEYS[1], 'string', 'once marker')
local ours = bn_type(KEYS[2], 'string') and redis.call('GET', KEYS[2]) == token
local marked = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], string.format('%d', now), 'PX', ttl)
  marked = 1
end
if ours then redis.call('DEL', KEYS[2]) end
if marked == 1 or ours then redis.call('PUBLISH', channel, 'done') end
return marked
