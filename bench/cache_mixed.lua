-- The result cache's mixed workload (bench/cache.sh): 90% reads of 50 hot
-- aggregates, 10% single-row writes to their tables. With `TABLES=1`
-- (the default) every statement reads sbtest1 and every write invalidates
-- every hot answer; with `TABLES=n` hot statement h reads sbtest(h % n +
-- 1) and each write goes to one of the n tables at random. `MODE=write`
-- runs writes only (what caching a table costs writers); `MODE=read` the
-- one aggregate of the flash crowd (bench/flash_crowd.lua).
local mode = os.getenv("MODE") or "mixed"
local size = tonumber(os.getenv("TABLE_SIZE") or "10000")
local tables = tonumber(os.getenv("TABLES") or "1")

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

local function write()
  con:query(string.format("UPDATE sbtest%d SET k = k + 1 WHERE id = %d",
    math.random(1, tables), math.random(1, size)))
end

function event()
  if mode == "read" then
    con:query("SELECT COUNT(*), SUM(k), MAX(c) FROM sbtest1 WHERE id BETWEEN 1 AND 5000")
  elseif mode == "write" then
    write()
  elseif math.random(1, 10) == 1 then
    write()
  else
    local h = math.random(0, 49)
    con:query(string.format(
      "SELECT COUNT(*), SUM(k), MAX(c) FROM sbtest%d WHERE id BETWEEN %d AND %d",
      h % tables + 1, h * 100 + 1, h * 100 + 5000))
  end
end

function thread_done()
  con:disconnect()
end
