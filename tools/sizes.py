#!/usr/bin/env python3
"""Size budgets (STYLE.md habit 9, issue 30): source files over 800 lines and
functions over 150 lines in crates/*/src.

    python3 tools/sizes.py [--files N] [--fns N] [--top K]

A function runs from its `fn` line to the closing brace at the same
indentation (the code is rustfmt'd, so that brace is the function's own).
Lines are counted as they stand, comments and blank lines included.
"""

import argparse
import pathlib
import re
import sys

FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")


def functions(path):
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        indent = m.group(1)
        # A declaration without a body (a trait's method) ends with `;`
        # before any `{`.
        j = i
        while j < len(lines) and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
            j += 1
        if j >= len(lines) or "{" not in lines[j]:
            continue
        if lines[j].rstrip().endswith("}") and lines[j].count("{") == lines[j].count("}"):
            yield m.group(2), i + 1, j - i + 1
            continue
        end = indent + "}"
        for k in range(j + 1, len(lines)):
            if lines[k].rstrip() == end:
                yield m.group(2), i + 1, k - i + 1
                break


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=800)
    ap.add_argument("--fns", type=int, default=150)
    ap.add_argument("--top", type=int, default=0, help="also list the K longest functions")
    ap.add_argument("root", nargs="?", default="crates")
    a = ap.parse_args()
    files = sorted(p for p in pathlib.Path(a.root).glob("*/src/**/*.rs"))
    big_files = []
    fns = []
    for p in files:
        n = len(p.read_text(encoding="utf-8", errors="replace").splitlines())
        if n > a.files:
            big_files.append((n, p))
        for name, line, length in functions(p):
            fns.append((length, f"{p}:{line}", name))
    fns.sort(reverse=True)
    print(f"files over {a.files} lines:")
    for n, p in sorted(big_files, reverse=True):
        print(f"  {n:5} {p}")
    print(f"functions over {a.fns} lines:")
    for length, where, name in fns:
        if length > a.fns:
            print(f"  {length:5} {name} ({where})")
    if a.top:
        print(f"the {a.top} longest functions:")
        for length, where, name in fns[: a.top]:
            print(f"  {length:5} {name} ({where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
