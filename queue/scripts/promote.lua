-- promote.lua: move scheduled jobs (delayed, or waiting for a retry) whose run-at
-- has come to the back of the ready list of their priority. The caller read the
-- due ids first; an id is only moved if it is still scheduled and due now.
--
-- Every due id leaves the scheduled set, so none is read again pass after
-- pass: a job whose priority (p) is missing or garbage is dead-lettered, its
-- error naming the field; a job key that is not a hash is moved to the job's
-- garbage key and a stub is dead-lettered in its place; an entry with no job
-- at all is dropped. Each comes back with its reason, for the caller to log.
-- A key of the wrong type that the writes need raises before any write. Run
-- twice, the second call finds the ids gone from the scheduled set and writes
-- nothing.
--
-- KEYS[1]  ZSET  route:{r}:scheduled
-- KEYS[2]  LIST  route:{r}:queue:high
-- KEYS[3]  LIST  route:{r}:queue:normal
-- KEYS[4]  LIST  route:{r}:queue:low
-- KEYS[5]  ZSET  route:{r}:dead
-- KEYS[6]  HASH  route:{r}:stats
-- KEYS[7+2i]  HASH  route:{r}:job:<id_i>
-- KEYS[8+2i]  any   route:{r}:garbage:<id_i>  where a job key that is not a hash goes
-- KEYS[7+2n]  ZSET  route:{r}:idle   waiting workers: one is woken per job moved (bn_wake)
-- KEYS[8+2n..19+2n]  the route's flow keys (Keys.FlowKeys): a keyed job (its
--          hash has its flow, field k) waits in its flow instead of a list, in
--          its old place (field q) when it had one, else at the back
-- ARGV[1]  now (unix ms)
-- ARGV[2]  the route's wake channel, for workers that take only some tasks
-- ARGV[3+i]  the ids, matching the key pairs
-- Returns: an array: the number of jobs moved, then one reason per bad entry
--          dead-lettered or dropped.
local now = bn_num(ARGV[1], 'now')
bn_str(ARGV[2], 'wake channel')
local n = #ARGV - 2
if #KEYS ~= 19 + 2 * n then error('bananas: promote needs two keys per id, the idle set and the flow keys') end
local F = bn_flowkeys()
bn_need_type(KEYS[1], 'zset', 'scheduled set')

-- Pass 1, reads only: what to do with each due id, and which keys that
-- writes; a key of the wrong type among them raises here, before any write,
-- and one that nothing needs this time (the dead set when no job is bad)
-- does not hold the others up.
local plan, needs = {}, {}
for i = 0, n - 1 do
  local id, job = ARGV[3 + i], KEYS[7 + 2 * i]
  local at = redis.call('ZSCORE', KEYS[1], id)
  if at and tonumber(at) <= now then
    local kind = bn_typeof(job)
    local step = {id = id, job = job, garbage = KEYS[8 + 2 * i], kind = kind}
    if kind == 'hash' then
      local prio = redis.call('HGET', job, 'p')
      step.why = bn_bad_prio(prio)
      if not step.why then
        step.list, step.prio = KEYS[1 + bn_prios[prio]], bn_prios[prio]
        local kq = redis.call('HMGET', job, 'k', 'q')
        if kq[1] and string.find(kq[1], '|', 1, true) then
          step.flow = kq[1]
          if kq[2] and string.find(kq[2], '^%d+$') and #kq[2] == 15 then step.seq = tonumber(kq[2]) end
        end
      end
    end
    if step.list then needs[step.list] = 'ready list' elseif kind ~= 'none' then needs[KEYS[5]] = 'dead-letter set' end
    plan[#plan + 1] = step
  end
end
for key, what in pairs(needs) do
  bn_need_type(key, what == 'ready list' and 'list' or 'zset', what)
end

-- Pass 2: every due id leaves the scheduled set.
local moved, woke, out = 0, false, {0}
if #plan > 0 then bn_flow_repair(F) end
for _, step in ipairs(plan) do
  local id, job = step.id, step.job
  redis.call('ZREM', KEYS[1], id)
  if step.flow then
    local seq = step.seq or bn_flow_next_seq(F)
    redis.call('HSET', job, 'q', string.format('%015.0f', seq))
    if bn_flow_add(F, step.prio, bn_member(step.flow, seq, id), id) == 1 then woke = true end
    moved = moved + 1
  elseif step.list then
    if bn_push(step.list, id, false) then woke = true end
    moved = moved + 1
  elseif step.why then
    bn_bury(job, KEYS[5], KEYS[6], id, now, 'dead-lettered instead of run: ' .. step.why)
    out[#out + 1] = 'job ' .. id .. ': ' .. step.why .. '; dead-lettered'
  elseif step.kind == 'none' then
    out[#out + 1] = 'scheduled entry ' .. id .. ' has no job; dropped'
  else
    local aside = bn_set_aside(job, step.garbage, step.kind)
    bn_stub(job, now)
    bn_bury(job, KEYS[5], KEYS[6], id, now, 'dead-lettered instead of run: ' .. aside)
    out[#out + 1] = 'job ' .. id .. ': ' .. aside .. '; dead-lettered as a stub'
  end
end
bn_wake(F.idle, moved, now)
if woke then redis.call('PUBLISH', ARGV[2], '1') end
out[1] = moved
return out
