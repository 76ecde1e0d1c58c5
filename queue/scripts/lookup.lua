-- lookup.lua: read where one job is, in one atomic step (Queue.Lookup and
-- Queue.Result). It writes nothing, so it runs on a Redis at maxmemory too,
-- where a MULTI/EXEC of the same reads is refused.
--
-- KEYS[1]  HASH    route:{r}:job:<id>
-- KEYS[2]  HASH    route:{r}:payloads
-- KEYS[3]  ZSET    route:{r}:scheduled
-- KEYS[4]  HASH    route:{r}:leases
-- KEYS[5]  STRING  route:{r}:result:<id>
-- ARGV[1]  the job id
-- Returns: the job hash as field, value pairs (empty when it has none), then
--          the light job's payload, its scheduled time, its lease token and
--          its result record, each false (a nil reply) when absent.
local id = bn_str(ARGV[1], 'job id')
bn_need_type(KEYS[1], 'hash', 'job hash')
bn_need_type(KEYS[2], 'hash', 'payloads hash')
bn_need_type(KEYS[3], 'zset', 'scheduled set')
bn_need_type(KEYS[4], 'hash', 'leases hash')
bn_need_type(KEYS[5], 'string', 'result record')
return {
  redis.call('HGETALL', KEYS[1]),
  redis.call('HGET', KEYS[2], id),
  redis.call('ZSCORE', KEYS[3], id),
  redis.call('HGET', KEYS[4], id),
  redis.call('GET', KEYS[5]),
}
