-- _unique.lua, a shared file (a script is loaded with the shared definitions
-- it names, see queue/scripts.go): the unique keys a job holds, and the
-- transitions that end their hold.
--
-- A job enqueued with a unique key says which key it holds, so that every
-- script that ends it can free it: a job with a hash of its own in its
-- fields, a light job in front of its payload (bn_payload_unique, which
-- bn_materialize turns into the same fields): u is the key's suffix
-- (route:{r}:unique:<u>), uu until when it is held ('s' started, 'c'
-- completed, 'e' ended: completed, dead or canceled; absent reads as 'e'),
-- and ut its ttl in ms (a replay takes the key back for that long). The caller passes the key in KEYS (it read u with the
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
-- frees ukey, the unique key that job id names — in its hash, or, for a job
-- with none, in its payload in payloads (when given): only when the job
-- holds that key (u names it), its uu says this ending frees it, and the
-- key's value is id — so a resend, or a stale holder whose key has passed
-- to another job, never frees another job's key. A key of another type
-- (garbage) is left alone.
local function bn_unique_ends(job, ukey, id, ending, payloads)
  if ukey == job then return false end
  local u, uu
  local kind = bn_typeof(job)
  if kind == 'hash' then
    local f = redis.call('HMGET', job, 'u', 'uu')
    u, uu = f[1], f[2]
  elseif kind == 'none' and payloads and bn_typeof(payloads) == 'hash' then
    local p = redis.call('HGET', payloads, id)
    if p then u, uu = bn_split_unique(p) end
  end
  if not u or string.sub(ukey, -(#u + 8)) ~= ':unique:' .. u then return false end
  if not bn_unique_freed_by[ending][uu or 'e'] then return false end
  if not bn_type(ukey, 'string') then return false end
  return redis.call('GET', ukey) == id
end
