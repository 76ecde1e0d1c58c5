-- _schedule.lua, a shared file of package scheduler's scripts (assembled by
-- queue.LoadLua after queue's own). Schedules live in buckets: bucket b's
-- records and its index share the hash tag {sched.<b>}, so one script
-- claims (or marks done) many schedules of a bucket at once, and on a
-- cluster the buckets spread over the masters.
--   ns:schedules:{sched.<b>}       ZSET  id -> when the schedule next needs a
--                                        scheduler (unix ms): a hint
--   ns:schedule:{sched.<b>}:<id>   HASH  the record, its definition and state:
--   name route prio env retries args spec tz jitter overlap catchup start end
--   plan          spec|tz|start|end: a PUT with the same plan keeps next
--   paused        1 or 0
--   next          unix ms of the next tick; 0 when the schedule has ended
--   created updated last_tick last_fire last_skip (unix ms), last_job
--   fired skipped (counts)
--   pend_tick pend_job   a claimed tick whose job is not yet known enqueued

-- sc_record returns the record's fields as a table, nil when the key holds
-- nothing, and raises, before any write, when it holds something that is
-- not a schedule's record (another type, or a next that is not a number).
local function sc_record(key)
  if not bn_type(key, 'hash') then
    error('bananas: schedule record ' .. key .. ' is not a hash')
  end
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return nil end
  local r = {}
  for i = 1, #flat, 2 do r[flat[i]] = flat[i + 1] end
  if not r['next'] or not string.find(r['next'], '^%d+$') then
    error('bananas: schedule record ' .. key .. ' is garbage: its next tick ' .. tostring(r['next']) .. ' is not a number')
  end
  return r
end

-- sc_fields reads fields of a record (the first must be next) for a batch:
-- it never raises, so one bad record does not stop the others. It returns
-- the values, or nil and 'gone' (no record) or a 'garbage: ...' reason.
local function sc_fields(key, ...)
  local v = redis.pcall('HMGET', key, 'next', ...)
  if type(v) == 'table' and v['err'] then
    return nil, 'garbage: schedule record ' .. key .. ' is not a hash'
  end
  if not v[1] then
    if redis.call('EXISTS', key) == 0 then return nil, 'gone' end
    return nil, 'garbage: schedule record ' .. key .. ' has no next tick'
  end
  if not string.find(v[1], '^%d+$') then
    return nil, 'garbage: schedule record ' .. key .. ' is garbage: its next tick ' .. v[1] .. ' is not a number'
  end
  return v
end

-- sc_index is the schedules index of a bucket, checked before any write.
local function sc_index(key)
  bn_need_type(key, 'zset', 'schedules index')
  return key
end

-- sc_ahead returns the job and tick of record r claimed ahead of its time
-- (the tick still to come at now) and how a pause treats it: 'drop' while
-- the claim is unfinished, 'rewind' once done; nil when there is none.
local function sc_ahead(r, now)
  local pt = tonumber(r['pend_tick'] or '')
  if r['pend_job'] and r['pend_job'] ~= '' and pt and pt > now then
    return r['pend_job'], pt, 'drop'
  end
  local lt = tonumber(r['last_tick'] or '')
  if r['last_job'] and r['last_job'] ~= '' and lt and lt > now then
    return r['last_job'], lt, 'rewind'
  end
  return nil
end
