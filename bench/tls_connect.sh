#!/usr/bin/env bash
# Connect-and-query with and without TLS (issue 16): clients that connect,
# run SELECT 1 and quit, in a loop, against one MariaDB directly and through
# hscale, plain and over TLS, all in one run; each hscale figure is a ratio
# of the direct one in the same TLS mode. The work is done by the example
# crates/hscale/examples/tls_connect.rs (it starts its own MariaDB with a
# certificate and two proxies in-process); a Markdown table goes to stdout.
#
# Environment: DURATION (seconds per configuration, default 10), CLIENTS
# (default 8).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

DURATION=${DURATION:-10}
CLIENTS=${CLIENTS:-8}

command -v mariadbd >/dev/null 2>&1 || { echo "bench: mariadbd not found (run: make deps)" >&2; exit 1; }
cargo run --quiet --release --locked -p hscale --example tls_connect -- "$DURATION" "$CLIENTS"
