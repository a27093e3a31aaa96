#!/usr/bin/env bash
# On a many-core machine without Debian's packages (the lent device), from a checkout that
# carries bench/scale/.bundle.tar.xz (bench/scale/bundle.sh): unpacks it under /opt/autonous-b,
# starts a durable PostgreSQL 15 (every durability default kept; shared_buffers 4GB,
# max_connections 800, pg_stat_statements loaded) as an unprivileged user, and runs
# bench/scale/manycore.py with ARGS (default: N = 1,2,4,8 processes x 32 slots, stub 100 ms,
# both backends). Results: $OUT/manycore.json and $OUT/manycore.log (or /tmp without $OUT).
# Usage: bash bench/scale/device.sh [manycore.py ARGS...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp}
b=/opt/autonous-b/b
[ -x $b/bin/autonous ] || { mkdir -p /opt/autonous-b && tar -C /opt/autonous-b -xJf "$here/.bundle.tar.xz"; }
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
