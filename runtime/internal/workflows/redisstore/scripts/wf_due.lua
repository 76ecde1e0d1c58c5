-- wf_due.lua: take the workflows the keeper should look at now
-- (Store.Due): those whose time in the index has come, each put
-- back at next, so that two keepers do not take the same one within a
-- period. Run twice, the second call finds them not due and returns fewer.
--
-- KEYS[1]  ZSET  workflows: workflow id -> when to look at it (ms)
-- ARGV[1]  now (unix ms)
-- ARGV[2]  next (unix ms)
-- ARGV[3]  at most this many
-- Returns  {id, ...}
local index = KEYS[1]
local now = bn_num(ARGV[1], 'now')
local nxt = bn_num(ARGV[2], 'next')
local limit = bn_num(ARGV[3], 'limit')
bn_need_type(index, 'zset', 'workflow index')
local ids = redis.call('ZRANGEBYSCORE', index, '-inf', now, 'LIMIT', 0, limit)
for _, id in ipairs(ids) do redis.call('ZADD', index, nxt, id) end
return ids
