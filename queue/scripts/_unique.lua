-- _unique.lua, a shared file (a script is loaded with the shared definitions
-- it names, see queue/scripts.go): the unique keys a job holds, and the
-- transitions that end their hold.
--
-- A job enqueued with a unique key always has a hash of its own, never a
-- light payload, so every script that ends it can read which key it holds:
-- field u is the key's suffix (route:{r}:unique:<u>), uu until when it is
-- held ('s' started, 'c' completed, 'e' ended: completed, dead or canceled;
-- absent reads as 'e'), and ut its ttl in ms (a replay takes the key back
-- for that long). The caller passes the key in KEYS (it read u with the
-- job), or the job's own key again when the job holds none: a job of no
-- unique key costs these helpers nothing.

-- Which endings free a key held until each point: a start frees only a key
-- held until started; a completion frees every key (one held until started
-- that a start did not free, say a lost reply, too); a death or a cancel
-- frees a key held until started or ended, and leaves one held until
-- completed to its ttl; so does an expiry (a job that never started).
local bn_unique_freed_by = {started = {s = true}, completed = {s = true, c = true, e = true}, dead = {s = true, e = true}, canceled = {s = true, e = true}, expired = {s = true, e = true}}

-- bn_unique_ends reports, reading only (call it before the script's first
-- write), whether ending ('started', 'completed', 'dead', 'canceled' or 'expired')
-- frees ukey, the unique key that job id's hash names: only when the job
-- holds that key (its field u names it), its uu says this ending frees it,
-- and the key's value is id — so a resend, or a stale holder whose key has
-- passed to another job, never frees another job's key. A key of another
-- type (garbage) is left alone.
local function bn_unique_ends(job, ukey, id, ending)
  if ukey == job or bn_typeof(job) ~= 'hash' then return false end
  local f = redis.call('HMGET', job, 'u', 'uu')
  if not f[1] or string.sub(ukey, -(#f[1] + 8)) ~= ':unique:' .. f[1] then return false end
  if not bn_unique_freed_by[ending][f[2] or 'e'] then return false end
  if not bn_type(ukey, 'string') then return false end
  return redis.call('GET', ukey) == id
end
