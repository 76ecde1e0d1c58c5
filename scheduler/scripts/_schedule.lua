-- _schedule.lua, a shared file of package scheduler's scripts (assembled by
-- queue.LoadLua after queue's own): the checks of a schedule's record,
-- ns:schedule:{<id>}, a HASH of its definition and its state:
--   name route prio env retries args spec tz jitter overlap catchup start end
--   plan          spec|tz|start|end: a PUT with the same plan keeps next
--   paused        1 or 0
--   next          unix ms of the next tick; 0 when the schedule has ended
--   created updated last_tick last_fire (unix ms), last_job
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
