-- audit.lua: add one entry to the audit log, the ZSET of the most recent
-- actions operators took, and trim it to its cap (oldest first). The entry
-- holds its own unique id, so the same ARGV is the same member: run twice,
-- the second ZADD changes nothing and the trim finds nothing more to drop.
--
-- KEYS[1]  ZSET  <ns>:audit   entry (JSON) -> when (unix microseconds)
-- ARGV[1]  when (unix microseconds)
-- ARGV[2]  the entry, JSON
-- ARGV[3]  cap: entries kept at most (>= 1)
-- Returns: the entries the log holds after the call.
local at = bn_num(ARGV[1], 'when')
local entry = bn_str(ARGV[2], 'entry')
local cap = bn_num(ARGV[3], 'cap')
if cap < 1 then error('bananas: cap must be at least 1, got ' .. ARGV[3]) end
bn_need_type(KEYS[1], 'zset', 'audit log')
redis.call('ZADD', KEYS[1], at, entry)
local n = redis.call('ZCARD', KEYS[1])
if n > cap then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - cap - 1)
  n = cap
end
return n
