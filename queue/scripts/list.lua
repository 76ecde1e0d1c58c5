-- list.lua: read one page of a job listing (Queue.ListJobs). It writes
-- nothing. A page is two calls: a window call finds where the cursor stands
-- and returns the ids that follow it (at most a fixed number), then a describe
-- call reads those jobs, keeps the ones the filters match and says how many
-- ids it went through. Two calls because a job's key is known only once its
-- id is read, and every key a script touches is passed in KEYS.
--
-- Order within a listing: "forward" is the order the route holds the jobs
-- (a ready list from its head, a sorted set by ascending score then id);
-- "back" the reverse. Positions below count from the start of the listing
-- order: a list's head forward, its tail back.
--
-- ARGV[1] is the mode.
--
-- 'list': the window of a ready-list listing.
--   KEYS[1] HASH route:{r}:payloads   KEYS[2] HASH route:{r}:leases
--   KEYS[3] ZSET route:{r}:scheduled  KEYS[4] ZSET route:{r}:dead
--   KEYS[5] HASH route:{r}:job:<X>    KEYS[6] HASH route:{r}:job:<A>
--           (the cursor's jobs below; any unused key when there is none)
--   KEYS[7..] LIST the ready lists, in listing order
--   ARGV[2] 1 forward, -1 back   ARGV[3] ids wanted (S, 1 to 100000)
--   ARGV[4] which of the lists the cursor is in (1-based)
--   ARGV[5] the position the cursor's job X had (a whole number, 0 to 2^40)
--   ARGV[6] X ('' = the list's start)
--   ARGV[7] A, the job that followed X ('' = none)
--   Returns: more (1 when entries may follow those returned), then triples
--   list number, position, id of up to S + 1 entries from the cursor on.
--   Where the cursor stands: just after X when X is found within W places of
--   where it was, or, X being still pending, anywhere in the places a job
--   that stayed can have drifted to (LPOS, bounded so that a job that left
--   the list and came back at its far end is not taken for it); else at A,
--   found the same way; else, forward, at the list's head (X and A are gone:
--   a fetch pops from the head, so whatever stayed was behind them) and,
--   back, past the end of that list (what was ahead of them was popped first).
--
-- 'zset': the window of a scheduled or dead listing.
--   KEYS[1] ZSET   ARGV[2] 1 forward, -1 back   ARGV[3] S
--   ARGV[4] score of the cursor ('' = the start; else a finite number)
--   ARGV[5] id of the cursor
--   Returns: more, then pairs id, score of up to S + 1 members strictly past
--   (score, id) in listing order (members with equal scores are in byte order
--   of their ids, as Redis keeps them).
--
-- 'describe': read and filter jobs.
--   KEYS[1] HASH route:{r}:payloads   KEYS[2] HASH route:{r}:leases
--   KEYS[3] ZSET route:{r}:active     KEYS[3+i] route:{r}:job:<id_i>
--   ARGV[2] most jobs to return   ARGV[3] task name ('' = any)
--   ARGV[4] text, lower case ('' = any): a substring of the id or the last error
--   ARGV[5] largest envelope returned (bytes); a larger one is left out
--   ARGV[5+2i-1], ARGV[5+2i]: id_i and the lease token it must still be
--   leased under ('' = no check)
--   Returns: how many ids were gone through, then for each job kept 10
--   values: id, name, priority, max retries, attempts, error, created ms,
--   envelope ('' when left out or unreadable), lease deadline ms ('' when
--   none), 'ok' or why the job could not be read whole. A job that has
--   neither payload nor key (finished meanwhile) or is no longer leased under
--   its token is left out.

local mode = ARGV[1]

-- bytes_lt compares as Redis orders the members of a sorted set (memcmp);
-- Lua's own < follows the server's collation locale.
local function bytes_lt(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- bn_dir reads a direction: 1 forward, -1 back.
local function bn_dir(v)
  local d = bn_num(v, 'direction')
  if d ~= 1 and d ~= -1 then error('bananas: direction must be 1 or -1, got ' .. v) end
  return d
end

-- bn_count_arg reads how many ids a window call returns: a whole number >= 1.
local function bn_count_arg(v)
  local n = bn_num(v, 'count')
  if n < 1 or n ~= math.floor(n) or n > 100000 then error('bananas: count must be a whole number from 1 to 100000, got ' .. v) end
  return n
end

if mode == 'list' then
  local W = 256
  local dir = bn_dir(ARGV[2])
  local want = bn_count_arg(ARGV[3])
  local li = bn_num(ARGV[4], 'list number')
  local at = bn_num(ARGV[5], 'position')
  local x, a = ARGV[6] or '', ARGV[7] or ''
  local nlists = #KEYS - 6
  if li < 1 or li > nlists or li ~= math.floor(li) then error('bananas: list number out of range') end
  -- 2^40: more entries than any list holds, and small enough that at + W
  -- still reaches Redis as an integer index.
  if at < 0 or at > 1099511627776 or at ~= math.floor(at) then
    error('bananas: position must be a whole number from 0 to 2^40, got ' .. ARGV[5])
  end
  for k = 7, #KEYS do
    if not bn_type(KEYS[k], 'list') then return {0} end -- garbage: nothing to list
  end

  -- range returns the entries at positions p0..p1 of list key in listing order.
  local function range(key, p0, p1)
    if p1 < p0 then return {} end
    if dir == 1 then return redis.call('LRANGE', key, p0, p1) end
    local got = redis.call('LRANGE', key, -(p1 + 1), -(p0 + 1))
    local out = {}
    for i = #got, 1, -1 do out[#out + 1] = got[i] end
    return out
  end

  -- pending tells whether id is waiting in some ready list: it has a payload
  -- or a job key and is neither leased, scheduled nor dead.
  local function pending(id, job)
    if redis.call('HEXISTS', KEYS[2], id) == 1 then return false end
    if bn_type(KEYS[3], 'zset') and redis.call('ZSCORE', KEYS[3], id) then return false end
    if bn_type(KEYS[4], 'zset') and redis.call('ZSCORE', KEYS[4], id) then return false end
    return redis.call('HEXISTS', KEYS[1], id) == 1 or redis.call('EXISTS', job) == 1
  end

  -- find returns the position of id in key within the bounds a job that
  -- stayed can have drifted to from position p, or nil.
  local function find(key, id, job, p, win, from)
    for i, v in ipairs(win) do
      if v == id then return from + i - 1 end
    end
    if not pending(id, job) then return nil end
    if dir == 1 then
      -- Forward a job only moves towards the head (pops ahead of it), save
      -- for a few handed back: it is within the first p + W entries.
      return redis.call('LPOS', key, id, 'MAXLEN', p + W + 1)
    end
    -- Back it only moves away from the tail (appends): look from the tail,
    -- and refuse a place nearer the tail than it can have drifted to.
    local pos = redis.call('LPOS', key, id, 'RANK', -1)
    if not pos then return nil end
    pos = redis.call('LLEN', key) - 1 - pos
    if pos < p - W then return nil end
    return pos
  end

  local start = 0
  if x ~= '' then
    local key = KEYS[6 + li]
    local from = math.max(0, at - W)
    local win = range(key, from, at + W)
    local p = find(key, x, KEYS[5], at, win, from)
    if p then
      start = p + 1
    elseif a ~= '' then
      start = find(key, a, KEYS[6], at + 1, win, from)
    end
    if not start then
      if dir == 1 then start = 0 else start = nil end
    end
  end

  local out = {1}
  local n = 0
  if not start then li, start = li + 1, 0 end
  while li <= nlists and n < want + 1 do
    local got = range(KEYS[6 + li], start, start + want - n)
    for i, id in ipairs(got) do
      out[#out + 1] = li
      out[#out + 1] = start + i - 1
      out[#out + 1] = id
      n = n + 1
    end
    if n < want + 1 then li, start = li + 1, 0 end
  end
  if n < want + 1 then out[1] = 0 end
  return out
end

if mode == 'zset' then
  local dir = bn_dir(ARGV[2])
  local want = bn_count_arg(ARGV[3])
  local score, id = ARGV[4] or '', ARGV[5] or ''
  if score ~= '' then
    local n = bn_num(score, 'cursor score')
    if n ~= n or n == math.huge or n == -math.huge then
      error('bananas: cursor score must be a finite number, got ' .. score)
    end
  end
  if not bn_type(KEYS[1], 'zset') then return {0} end
  -- lt, le: how many members come before the cursor's (score, id) in
  -- ascending order, and how many come before or at it.
  local lt, le = 0, 0
  if score ~= '' then
    local have = redis.call('ZSCORE', KEYS[1], id)
    if have and tonumber(have) == tonumber(score) then
      lt = redis.call('ZRANK', KEYS[1], id)
      le = lt + 1
    else
      -- The cursor's member moved or left: binary search the members of
      -- equal score, which Redis orders by bytes, for the first past id.
      local lo = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. score)
      local hi = redis.call('ZCOUNT', KEYS[1], '-inf', score)
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        local m = redis.call('ZRANGE', KEYS[1], mid, mid)[1]
        if m and not bytes_lt(id, m) then lo = mid + 1 else hi = mid end
      end
      lt, le = lo, lo
    end
  end
  local got
  if dir == 1 then
    got = redis.call('ZRANGE', KEYS[1], le, le + want, 'WITHSCORES')
  else
    local start = 0
    if score ~= '' then start = redis.call('ZCARD', KEYS[1]) - lt end
    got = redis.call('ZREVRANGE', KEYS[1], start, start + want, 'WITHSCORES')
  end
  local out = {0}
  if #got / 2 > want then out[1] = 1 end
  for i = 1, #got do out[#out + 1] = got[i] end
  return out
end

if mode == 'describe' then
  local limit = bn_num(ARGV[2], 'limit')
  local task, text = ARGV[3], ARGV[4]
  local envmax = bn_num(ARGV[5], 'envelope limit')
  -- The envelope's slices e0, e1, ... up to envmax bytes, and one more.
  local slices = {}
  for k = 0, math.ceil(envmax / 60) do slices[#slices + 1] = 'e' .. k end
  local light_ok = bn_type(KEYS[1], 'hash')
  local leases_ok = bn_type(KEYS[2], 'hash')
  local active_ok = bn_type(KEYS[3], 'zset')
  local out = {0}
  local kept, went = 0, 0
  local i = 1
  while 5 + 2 * i <= #ARGV and kept < limit do
    local id, token = ARGV[4 + 2 * i], ARGV[5 + 2 * i]
    local job = KEYS[3 + i]
    went = went + 1
    local row = nil
    local deadline = ''
    local held = true
    if token ~= '' then
      held = leases_ok and redis.call('HGET', KEYS[2], id) == token
      if held and active_ok then deadline = redis.call('ZSCORE', KEYS[3], token) or '' end
    end
    if held then
      local kind = bn_typeof(job)
      local pay = light_ok and redis.call('HGET', KEYS[1], id)
      if kind == 'hash' then
        local f = redis.call('HMGET', job, 'n', 'p', 'm', 'a', 'err', 'c')
        local env = ''
        if redis.call('HLEN', job) <= 10 + #slices then
          local parts = redis.call('HMGET', job, unpack(slices))
          local got = {}
          for k = 1, #parts do
            if not parts[k] then break end
            got[k] = parts[k]
          end
          -- A slice past the last asked for means a larger envelope.
          if not parts[#parts] then env = table.concat(got) end
        end
        row = {id, f[1] or '', f[2] or '', f[3] or '', f[4] or '', f[5] or '', f[6] or '', env, deadline, 'ok'}
      elseif pay then
        local name, prio, max, created, env = bn_split(pay)
        if name then
          if #env > envmax then env = '' end
          row = {id, name, prio, max, '', '', created, env, deadline, 'ok'}
        else
          row = {id, '', '', '', '', '', '', '', deadline, 'its payload does not read as one'}
        end
      elseif kind ~= 'none' then
        row = {id, '', '', '', '', '', '', '', deadline, 'its job key holds a ' .. kind .. ', not a job hash'}
      end
    end
    if row and task ~= '' and row[2] ~= task then row = nil end
    if row and text ~= '' and not string.find(string.lower(id), text, 1, true)
        and not string.find(string.lower(row[6]), text, 1, true) then
      row = nil
    end
    if row then
      kept = kept + 1
      for _, v in ipairs(row) do out[#out + 1] = v end
    end
    i = i + 1
  end
  out[1] = went
  return out
end

error('bananas: unknown list mode ' .. tostring(mode))
