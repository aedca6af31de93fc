-- sysbench script for bench/transactions.sh: one transfer per event,
-- BEGIN; two UPDATEs; COMMIT. MODE "cross": from an odd id to an even id
-- (two backends through hscale); "single": two odd ids (one backend).
-- ACCOUNTS: number of accounts (ids 1..ACCOUNTS).
local mode = os.getenv("MODE") or "cross"
local accounts = tonumber(os.getenv("ACCOUNTS") or "10000")

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function thread_done()
  con:disconnect()
end

local function odd()
  return 2 * math.random(0, accounts / 2 - 1) + 1
end

function event()
  local from = odd()
  local to
  if mode == "cross" then
    to = 2 * math.random(1, accounts / 2)
  else
    repeat to = odd() until to ~= from
  end
  con:query("BEGIN")
  con:query("UPDATE accounts SET balance = balance - 1 WHERE id = " .. from)
  con:query("UPDATE accounts SET balance = balance + 1 WHERE id = " .. to)
  con:query("COMMIT")
end
