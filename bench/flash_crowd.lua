-- One identical aggregate from every client (bench/flash_crowd.sh): the
-- flash crowd of issue 33.
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function event()
  con:query("SELECT COUNT(*), SUM(k), MAX(c) FROM sbtest1 WHERE id BETWEEN 1 AND 5000")
end

function thread_done()
  con:disconnect()
end
