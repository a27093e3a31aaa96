#!/usr/bin/env bash
# Packs what bench/scale/device.sh needs on a many-core machine that has neither Debian's
# packages nor a network: the release binaries, every shared library they and PostgreSQL 15 need
# (glibc's own left to the host), PostgreSQL 15's server, initdb, psql and share files (Debian's
# layout under pg/), the sqlite3 shell and the tokenizer files. Output: bench/scale/.bundle.tar.xz
# (ignored by git; about 30 MB).
# Usage: bench/scale/bundle.sh   (after a release build in build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b=$stage/b
mkdir -p "$b/bin" "$b/lib" "$b/tok" "$b/pg/usr/lib/postgresql/15/lib" "$b/pg/usr/share/postgresql"
for f in build/cmd/autonous/autonous build/cmd/autonous-stub/autonous-stub; do
  cp "$root/$f" "$b/bin/" && strip "$b/bin/$(basename "$f")"
done
cp /usr/bin/sqlite3 "$b/bin/"
cp -a /usr/lib/postgresql/15/bin "$b/pg/usr/lib/postgresql/15/"
for f in plpgsql.so pg_stat_statements.so dict_snowball.so; do
  cp /usr/lib/postgresql/15/lib/$f "$b/pg/usr/lib/postgresql/15/lib/"
done
cp -a /usr/share/postgresql/15 "$b/pg/usr/share/postgresql/"
cp -a /usr/local/share/autonous/tokenizer/. "$b/tok/"
# Token-count samples for bench/tokens_python.py: each corpus file repeated to about 12 MB.
mkdir -p "$b/samples"
for f in english.txt chinese_simplified.txt code.txt json_compact.json mixed_chat.txt; do
  python3 -c 'import sys; t = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(t * (12000000 // len(t) + 1))' \
    "$root/tests/data/tokens/corpus/$f" "$b/samples/$f"
done
for f in "$b"/bin/* "$b"/pg/usr/lib/postgresql/15/bin/* "$b"/pg/usr/lib/postgresql/15/lib/*.so; do
  ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64)\.so' |
  while read -r l; do cp -L "$l" "$b/lib/"; done
tar -C "$stage" -cJf "$root/bench/scale/.bundle.tar.xz" b
ls -la "$root/bench/scale/.bundle.tar.xz"
