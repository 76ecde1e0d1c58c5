-- once_claim.lua: claim the right to run a side effect of runtime.Once. Unless
-- the effect's marker says it was done, the caller's token takes the claim
-- when nobody holds it — or when the holder's claim ran out: its process died,
-- or stopped renewing — for ttl ms; otherwise the caller learns how long the
-- holder's claim has left, and waits that long at most (or for the once
-- channel, on which done and release announce themselves) before it asks again.
--
-- Harmless twice: a second run with the same token finds its own claim and
-- answers "claimed" again, setting the same expiry; once the marker is set it
-- answers "done", as it does to every caller.
--
-- A marker or claim key of another type (garbage) is an error raised before
-- any write: running the effect while its record is unreadable could run it
-- twice. A claim without an expiry (garbage too: it would hold every caller
-- off for ever) is given ttl, so that it ends as a dead holder's claim does.
--
-- KEYS[1]  STRING  once:{h}:done    when the effect was done (ms), with its ttl (7 days)
-- KEYS[2]  STRING  once:{h}:claim   the token of the caller running the effect, with its ttl
-- ARGV[1]  the caller's token
-- ARGV[2]  claim ttl ms (> 0)
-- Returns: {1, ttl} claimed: the caller runs the effect; {0, 0} done before;
--          {2, left} another caller holds the claim for left ms more.
local token = bn_str(ARGV[1], 'once token')
local ttl = bn_num(ARGV[2], 'once claim ttl')
if ttl <= 0 then error('bananas: once claim ttl must be a positive number of ms') end
bn_need_type(KEYS[1], 'string', 'once marker')
bn_need_type(KEYS[2], 'string', 'once claim')
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, 0} end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= token then
  -- PTTL answers 0 for a claim that runs out at this very ms (it is the
  -- holder's no longer), -1 for one without an expiry.
  local left = redis.call('PTTL', KEYS[2])
  if left > 0 then return {2, left} end
  if left == -1 then
    redis.call('PEXPIRE', KEYS[2], ttl)
    return {2, ttl}
  end
end
redis.call('SET', KEYS[2], token, 'PX', ttl)
return {1, ttl}
