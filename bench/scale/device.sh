#!/usr/bin/env bash
# On a many-core machine without Debian's packages (the lent device), from a checkout that
# carries bench/scale/.bundle.tar.xz (bench/scale/bundle.sh): unpacks it under /opt/autonous-b,
# starts a durable PostgreSQL 15 (every durability default kept; shared_buffers 4GB,
# max_connections 800, pg_stat_statements loaded) as an unprivileged user, and runs
# bench/scale/manycore.py with ARGS (default: N = 1,2,4,8 processes x 32 slots, stub 100 ms,
# both backends); then, where Python's tiktoken is installed, bench/tokens_python.py on the
# bundle's samples. Results: $OUT/manycore.json, manycore.log, tokens.jsonl (or /tmp without $OUT).
# Usage: bash bench/scale/device.sh [manycore.py ARGS...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp}
b=/opt/autonous-b/b
# Unpacked again whenever the bundle changed (a warm machine keeps an earlier one).
sum=$(sha256sum "$here/.bundle.tar.xz" | cut -c1-16)
if [ "$(cat /opt/autonous-b/sum 2>/dev/null)" != "$sum" ]; then
  rm -rf /opt/autonous-b && mkdir -p /opt/autonous-b &&
    tar -C /opt/autonous-b -xJf "$here/.bundle.tar.xz" && echo "$sum" > /opt/autonous-b/sum
fi
echo "bundle $sum, autonous $(sha256sum $b/bin/autonous | cut -c1-16)"
pgbin=$b/pg/usr/lib/postgresql/15/bin
export LD_LIBRARY_PATH=$b/lib PATH=$pgbin:$b/bin:$PATH TOKENIZER_DATA_DIR=$b/tok
export AUTONOUS_BIN=$b/bin/autonous AUTONOUS_STUB=$b/bin/autonous-stub
echo "cores $(nproc)"
$AUTONOUS_BIN --help >/dev/null || { ldd $AUTONOUS_BIN | grep 'not found'; exit 1; }
# PostgreSQL refuses to run as root: as nobody.
as_nobody() { python3 -c 'import os, sys; os.setgroups([]); os.setgid(65534); os.setuid(65534); os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }
d=/tmp/autonous-pgdata
if [ ! -d $d/data ]; then
  mkdir -p $d && chown 65534:65534 $d && chmod 700 $d
  as_nobody $pgbin/initdb -D $d/data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$out/initdb.log" 2>&1 ||
    { tail "$out/initdb.log"; exit 1; }
fi
as_nobody $pgbin/pg_ctl -D $d/data -l $d/log -w -o "-c listen_addresses=127.0.0.1 -p 55432 -k $d \
  -c max_connections=800 -c shared_buffers=4GB -c jit=off \
  -c shared_preload_libraries=pg_stat_statements" start || { tail $d/log; exit 1; }
export PG_URL=postgresql://postgres@127.0.0.1:55432/postgres
python3 "$here/manycore.py" --out "$out/manycore.json" "$@" 2>&1 | tee "$out/manycore.log"
as_nobody $pgbin/pg_ctl -D $d/data -m fast -w stop >/dev/null
# Exact counting against Python's tiktoken, where the machine has it.
if python3 -c 'import tiktoken' 2>/dev/null; then
  timeout 200 python3 "$here/../tokens_python.py" $b/samples > "$out/tokens.jsonl" 2>&1
  cat "$out/tokens.jsonl"
fi
