#!/usr/bin/env python3
"""The import graph of crates/hscale/src's top-level modules (issue 30 item 4):
which modules each one names through `crate::` paths (outside `//` comments
and a file's trailing `#[cfg(test)] mod tests`), then the groups of modules
that import each other in a circle.

    python3 tools/imports.py [SRC_DIR [FROM TO]]

With FROM and TO, also the file:line of every use of TO in FROM.
"""
import pathlib, re, sys, itertools
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else 'crates/hscale/src')
edges = {}
where = {}
for p in root.rglob('*.rs'):
    rel = p.relative_to(root)
    top = rel.parts[0].removesuffix('.rs')
    if top in ('main', 'lib'): continue
    text = p.read_text()
    # drop test modules at the end: from '#[cfg(test)]\nmod tests {' on
    m = re.search(r'^#\[cfg\(test\)\]\s*\nmod tests \{', text, re.M)
    if m: text = text[:m.start()]
    for ln, line in enumerate(text.split('\n'), 1):
        s = line.split('//')[0]
        for t in re.findall(r'crate::([a-z_0-9]+)', s):
            if t != top:
                edges.setdefault(top, set()).add(t)
                where.setdefault((top, t), []).append(f'{rel}:{ln}')
        # super:: from a top-level file in a dir goes to parent = crate root: ignore
nodes = sorted(set(edges) | {t for v in edges.values() for t in v})
# strongly connected components (Tarjan)
idx = {}; low = {}; st = []; on = set(); sccs = []; c = [0]
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        sccs.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in nodes:
    if v not in idx: sc(v)
for v in nodes:
    print(f'{v}: {" ".join(sorted(edges.get(v, ())))}')
print('cycles (strongly connected groups):')
for comp in sccs:
    if len(comp) > 1: print('  ', comp)
if len(sys.argv) > 3:
    for w in where.get((sys.argv[2], sys.argv[3]), []): print(w)
