-- sysbench script for bench/unique_keys.sh: MODE "insert" inserts one row
-- with an email no other event uses (run, thread and event numbered);
-- MODE "read" reads one row by email among ROWS rows named
-- known<n>@example.com.
local mode = os.getenv("MODE") or "insert"
local rows = tonumber(os.getenv("ROWS") or "10000")
local run = os.getenv("RUN") or "0"
local n = 0

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function thread_done()
  con:disconnect()
end

function event(thread_id)
  if mode == "insert" then
    n = n + 1
    con:query(string.format(
      "INSERT INTO users (email, name) VALUES ('r%s-t%d-%d@example.com', 'x')",
      run, thread_id, n))
  else
    con:query(string.format(
      "SELECT id, name FROM users WHERE email = 'known%d@example.com'",
      math.random(0, rows - 1)))
  end
end
