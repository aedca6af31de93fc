#!/usr/bin/env python3
"""Check the documentation's links; `make docs` runs it.

  docs/check-links.py            the Markdown sources
  docs/check-links.py --html     also the book mdBook built into docs/book/

Markdown (README.md, ARCHITECTURE.md, bench/RESULTS.md, docs/src/*.md):
every relative link must name a file that exists, and a `#fragment` into a
Markdown file a heading of it; every `{{#include}}` must name a file; a file
the book includes must hold no relative link (it would resolve from the
including page, not from the file); docs/src/SUMMARY.md must list every page
of docs/src and every page it lists must exist.

HTML (--html): every relative href and src of the built book must name a
file of the book, and a `#fragment` an id of that page.

Prints each broken link as `file:line: message` and exits 1 if there is any.
"""

import html.parser
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "docs" / "src"
BOOK = ROOT / "docs" / "book"
TOP_FILES = ["README.md", "ARCHITECTURE.md", "bench/RESULTS.md"]

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
INCLUDE = re.compile(r"\{\{#include\s+([^}\s:]+)[^}]*\}\}")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")

errors = []


def error(path, line, msg):
    errors.append(f"{path.relative_to(ROOT)}:{line}: {msg}")


def prose_lines(text):
    """(line number, line) outside fenced code, with code spans blanked."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)[:3]
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, re.sub(r"(`+)(?:(?!\1).)*?\1", lambda s: " " * len(s.group(0)), line)


def slug(heading):
    """The id mdBook (and, for these headings, GitHub) gives a heading."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    out = []
    for ch in text:
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def anchors(path, cache={}):
    if path not in cache:
        seen, ids = {}, set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                ids.add(base if n == 0 else f"{base}-{n}")
        cache[path] = ids
    return cache[path]


def links(path):
    for n, line in prose_lines(path.read_text(encoding="utf-8")):
        for m in LINK.finditer(line):
            yield n, m.group(1)
        m = REF_DEF.match(line)
        if m:
            yield n, m.group(1)


def check_markdown(path, included):
    for n, target in links(path):
        if SCHEME.match(target):
            continue
        if path in included and not target.startswith("#"):
            error(path, n, f"relative link {target!r} in a file the book includes "
                  "(it would resolve from the including page): use a code span")
            continue
        file_part, _, fragment = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            error(path, n, f"broken link {target!r}: {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest} does not exist")
            continue
        if fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            error(path, n, f"broken link {target!r}: no heading #{fragment} in {dest.relative_to(ROOT)}")


def check_book_sources():
    summary = SRC / "SUMMARY.md"
    listed = set()
    for n, target in links(summary):
        page = (SRC / target.partition("#")[0]).resolve()
        listed.add(page)
        if not page.exists():
            error(summary, n, f"SUMMARY entry {target!r} does not exist")
    included = set()
    for page in sorted(SRC.glob("*.md")):
        if page.name != "SUMMARY.md" and page.resolve() not in listed:
            error(page, 1, "page is not listed in docs/src/SUMMARY.md")
        for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            for m in INCLUDE.finditer(line):
                dest = (page.parent / m.group(1)).resolve()
                if dest.exists():
                    included.add(dest)
                else:
                    error(page, n, f"{{{{#include}}}} of {m.group(1)!r}: no such file")
    return included


class Refs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name in ("href", "src") and value:
                self.refs.append((self.getpos()[0], value))


def check_html():
    if not BOOK.is_dir():
        error(ROOT / "docs", 0, "no built book in docs/book (run mdbook build docs)")
        return
    parsed = {}

    def parse(page):
        if page not in parsed:
            p = Refs()
            p.feed(page.read_text(encoding="utf-8", errors="replace"))
            parsed[page] = p
        return parsed[page]

    for page in sorted(BOOK.rglob("*.html")):
        for line, ref in parse(page).refs:
            if SCHEME.match(ref) or ref.startswith("/"):
                continue
            file_part, _, fragment = ref.partition("#")
            file_part = file_part.partition("?")[0]
            dest = (page.parent / file_part).resolve() if file_part else page
            if dest.is_dir():
                dest = dest / "index.html"
            if not dest.exists():
                error(page, line, f"broken link {ref!r}")
            elif fragment and dest.suffix == ".html" and fragment not in parse(dest).ids:
                error(page, line, f"broken link {ref!r}: no id {fragment!r}")


def main():
    included = check_book_sources()
    for name in TOP_FILES:
        check_markdown((ROOT / name).resolve(), included)
    for page in sorted(SRC.glob("*.md")):
        check_markdown(page.resolve(), included)
    if "--html" in sys.argv[1:]:
        check_html()
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check-links: {len(errors)} broken link(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
