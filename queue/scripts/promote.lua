-- promote.lua: move scheduled jobs (delayed, or waiting for a retry) whose run-at
-- has come to the back of the ready list of their priority. The caller read the
-- due ids first; an id is only moved if it is still scheduled and due now.
--
-- KEYS[1]  ZSET  route:{r}:scheduled
-- KEYS[2]  LIST  route:{r}:queue:high
-- KEYS[3]  LIST  route:{r}:queue:normal
-- KEYS[4]  LIST  route:{r}:queue:low
-- KEYS[5..]  HASH  route:{r}:job:<id_i>, one per id
-- ARGV[1]  now (unix ms)
-- ARGV[2]  wake channel
-- ARGV[3..]  the ids, matching KEYS[5..]
-- Returns: the number of jobs moved.
local now = bn_num(ARGV[1], 'now')
bn_str(ARGV[2], 'wake channel')
if #ARGV - 2 ~= #KEYS - 4 then error('bananas: promote needs one id per job key') end

local moved, woke = 0, false
for i = 5, #KEYS do
  local id = ARGV[i - 2]
  local at = redis.call('ZSCORE', KEYS[1], id)
  if at and tonumber(at) <= now then
    local prio = redis.call('HGET', KEYS[i], 'p')
    redis.call('ZREM', KEYS[1], id)
    if prio and bn_prios[prio] then
      if bn_push(KEYS[1 + bn_prios[prio]], id, false) then woke = true end
      moved = moved + 1
    end
  end
end
if woke then redis.call('PUBLISH', ARGV[2], '1') end
return moved
