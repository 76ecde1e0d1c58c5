-- _checks.lua, a shared file (a script is loaded with the shared definitions
-- it names, see queue/scripts.go): the argument and key-type checks with which
-- each script validates all of its input before its first write.

local function bn_num(v, what)
  local n = tonumber(v)
  if n == nil then
    error('bananas: ' .. what .. ' must be a number, got ' .. tostring(v))
  end
  return n
end

local function bn_str(v, what)
  if v == nil or v == false or v == '' then
    error('bananas: ' .. what .. ' must not be empty')
  end
  return v
end

-- bn_type reports whether key holds a value of type want ('hash', 'zset',
-- 'list', 'string') or nothing at all. Scripts check the keys they read before
-- their first write: a key of the wrong type (written by hand, by a foreign
-- tool) would otherwise raise WRONGTYPE half-way through, after writes Redis
-- does not roll back.
local function bn_type(key, want)
  local t = redis.call('TYPE', key)
  if type(t) == 'table' then t = t['ok'] end
  return t == want or t == 'none'
end

-- bn_need_type raises, before any write, when key holds another type than want.
local function bn_need_type(key, want, what)
  if not bn_type(key, want) then
    error('bananas: ' .. what .. ' (' .. key .. ') is not a ' .. want)
  end
end

-- bn_checked runs cmd on key, a command that reads key or is the script's
-- first write, and raises as bn_need_type does when key holds another type
-- than want: the check rides on a command the script makes anyway instead
-- of costing a TYPE call. Any other error (a write refused at maxmemory) is
-- raised as it is.
local function bn_checked(what, want, cmd, key, ...)
  local r = redis.pcall(cmd, key, ...)
  if type(r) == 'table' and r['err'] then
    if string.find(r['err'], 'WRONGTYPE', 1, true) then
      error('bananas: ' .. what .. ' (' .. key .. ') is not a ' .. want)
    end
    error(r['err'])
  end
  return r
end
