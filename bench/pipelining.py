#!/usr/bin/env python3
"""bench/pipelining.sh's client: CONNS connections to one MariaDB, each writing
DEPTH point selects in one write, then reading their answers, for SECONDS.
Prints START when counting begins and STMTS/QPS at the end."""
import sys, socket, struct, threading, time, random, pymysql
port, conns, depth, secs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
count = [0] * conns
stop = False
def recv_exact(s, n, buf):
    while len(buf[0]) < n:
        d = s.recv(65536)
        if not d: raise EOFError
        buf[0] += d
    out = buf[0][:n]; buf[0] = buf[0][n:]; return out
def read_packet(s, buf):
    h = recv_exact(s, 4, buf)
    n = h[0] | h[1] << 8 | h[2] << 16
    return recv_exact(s, n, buf)
def worker(i):
    c = pymysql.connect(host='127.0.0.1', port=port, user='root', password='', database='sbtest')
    s = c._sock
    buf = [b'']
    while not stop:
        out = b''
        for _ in range(depth):
            q = b'\x03' + b'SELECT c FROM sbtest1 WHERE id=%d' % random.randint(1, 10000)
            out += struct.pack('<I', len(q))[:3] + b'\x00' + q
        s.sendall(out)
        for _ in range(depth):
            eofs = 0
            while eofs < 2:
                p = read_packet(s, buf)
                if p[0] == 0xfe and len(p) < 9: eofs += 1
                elif p[0] == 0xff: raise Exception(p)
        count[i] += depth
ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(conns)]
for t in ts: t.start()
time.sleep(1); c0 = sum(count); t0 = time.time()
print("START", flush=True); sys.stdout.flush()
time.sleep(secs)
c1 = sum(count); t1 = time.time()
print("STMTS", c1 - c0, "QPS", (c1 - c0) / (t1 - t0), flush=True)
stop = True
