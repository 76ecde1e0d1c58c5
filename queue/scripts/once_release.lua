-- once_release.lua: give up the claim on a side effect of runtime.Once whose
-- run failed, if the caller still holds it, and announce it on the once
-- channel: a waiting caller then claims the effect and runs it at once,
-- rather than when the claim would have run out.
--
-- Harmless twice: a second run finds the claim gone (or another caller's) and
-- writes nothing.
--
-- KEYS[1]  STRING  once:{h}:claim
-- ARGV[1]  the caller's token
-- ARGV[2]  the once channel
-- Returns: 1 released, 0 not held (a claim key of another type included).
local token = bn_str(ARGV[1], 'once token')
local channel = bn_str(ARGV[2], 'once channel')
if not bn_type(KEYS[1], 'string') or redis.call('GET', KEYS[1]) ~= token then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', channel, 'released')
return 1
