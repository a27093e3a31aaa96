#!/bin/bash
# Peak RSS of `autonous worker --drain` answering one task in each of several chats, each chat
# on its own model (`chat set --model`), against the loopback stub. Without arguments: 8 chats
# on OPENAI_MODEL. Counters are loaded once per tokenizer (#31), so chats on gpt-4o, gpt-4.1, o3
# … cost what one o200k counter costs.
# Usage: bench/models/chat_model_memory.sh [MODEL ...]   (from the repository root, after a build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/build/cmd/autonous/autonous}
STUB=$ROOT/build/cmd/autonous-stub/autonous-stub
D=$(mktemp -d)
trap 'kill $SP 2>/dev/null; rm -rf "$D"' EXIT
"$STUB" --port-file "$D/port" > /dev/null 2>&1 & SP=$!
for _ in $(seq 100); do [ -s "$D/port" ] && break; sleep 0.1; done
export DB_PATH=$D/a.db OPENAI_MODEL=gpt-4o-mini POLL_INTERVAL_MS=20
export OPENAI_BASE_URL=http://$(cat "$D/port")/v1
i=0
for m in "$@"; do
  i=$((i + 1))
  "$BIN" chat set "c$i" --model "$m" > /dev/null 2>&1
  "$BIN" enqueue --chat "c$i" "hello $m" > /dev/null
done
if [ $# -eq 0 ]; then for i in $(seq 8); do "$BIN" enqueue --chat "c$i" hello > /dev/null; done; fi
/usr/bin/time -f "%M KB peak RSS" "$BIN" worker --drain 2>&1 > /dev/null | grep "KB peak RSS"
