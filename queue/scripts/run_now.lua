-- run_now.lua: make a scheduled job (delayed, or waiting for its retry) due
-- now (Queue.RunNow): its run-at, its score in the scheduled set, becomes now
-- when it was later, so that the promoter's next pass, which the caller runs
-- at once, moves it to its ready list as it moves any due job (its flow, its
-- priority, a waiting worker woken). Nothing else of the job changes: its
-- attempts, its retries left and its args stay. Only an id already in the
-- set is touched (ZADD XX), after the checks. Run twice, the second call
-- finds the job due (1, nothing written) or promoted and gone from the set
-- (0).
--
-- KEYS[1]  ZSET  route:{r}:scheduled
-- ARGV[1]  the job id
-- ARGV[2]  now (unix ms)
-- Returns: 1 the job is in the scheduled set and due now, 0 it is not in the
--          set (the caller finds where it is).
local id = bn_str(ARGV[1], 'job id')
local now = bn_num(ARGV[2], 'now')
bn_need_type(KEYS[1], 'zset', 'scheduled set')
local at = redis.call('ZSCORE', KEYS[1], id)
if not at then return 0 end
if tonumber(at) > now then redis.call('ZADD', KEYS[1], 'XX', now, id) end
return 1
