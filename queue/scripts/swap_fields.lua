-- swap_fields.lua: replace fields of one hash with new values, all of them
-- or none, only while each still holds the exact old value the caller read:
-- a compare-and-set (Queue.SwapFields; `app keys rotate` reseals a
-- schedule's record with it, so a schedule put meanwhile is left alone).
-- A second run with the same ARGV finds the new values, not the old ones,
-- and writes nothing.
--
-- Every value is checked before the first write, so a refusal writes
-- nothing.
--
-- KEYS[1]  HASH  the record (absent: nothing to swap)
-- ARGV     n triples: field, old value, new value (new never empty)
-- Returns: 1 swapped, 0 left alone (a field holds another value, or the
--          record is gone)
local n = #ARGV / 3
if n < 1 or n ~= math.floor(n) then
  error('bananas: swap_fields wants triples of field, old, new; got ' .. #ARGV .. ' values')
end
for i = 0, n - 1 do
  bn_str(ARGV[1 + 3 * i], 'field')
  if ARGV[3 + 3 * i] == '' then error('bananas: swap_fields: the new value of ' .. ARGV[1 + 3 * i] .. ' is empty') end
end
if not bn_type(KEYS[1], 'hash') then
  error('bananas: swap_fields: ' .. KEYS[1] .. ' is not a hash')
end
for i = 0, n - 1 do
  local have = redis.call('HGET', KEYS[1], ARGV[1 + 3 * i])
  if have ~= ARGV[2 + 3 * i] then return 0 end
end
for i = 0, n - 1 do
  redis.call('HSET', KEYS[1], ARGV[1 + 3 * i], ARGV[3 + 3 * i])
end
return 1
