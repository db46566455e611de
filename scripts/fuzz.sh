#!/bin/bash
# Builds the wire decoder's libFuzzer target with ASan + UBSan and runs it for FUZZ_SECONDS on a seed corpus.
# Usage: scripts/fuzz.sh [libFuzzer options...]
#   FUZZ_SECONDS  run time (default 20)     FUZZ_DIR  build and corpus folder (default build/fuzz)
#   FUZZ_CC       compiler (default clang)
# Exit status: 0 when the run ended without a crash, leak or UB report; the input that broke a run is kept
# in $FUZZ_DIR/crashes (replay: $FUZZ_DIR/fuzz_wire FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${FUZZ_SECONDS:-20}"
dir="${FUZZ_DIR:-build/fuzz}"
cc="${FUZZ_CC:-clang}"
mkdir -p "$dir/gen" "$dir/seeds" "$dir/corpus" "$dir/crashes"

# Generated into $dir so that the fuzz build never mixes with make's (gcc, maybe SAN) objects.
if [ ! -e "$dir/gen/common/wire/wire.pb-c.c" ] || [ common/wire/wire.proto -nt "$dir/gen/common/wire/wire.pb-c.c" ]; then
    protoc-c --proto_path=. --c_out="$dir/gen" common/wire/wire.proto
fi
srcs=(common/wire/wire.c common/wire/wire_check.c common/wire/wire_rules.c common/wire/wire_names.c
      common/wire/wire_peer.c "$dir/gen/common/wire/wire.pb-c.c")
flags=(-g -O1 -std=gnu11 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE
       -DPLAUNCH_VERSION="\"$(cat VERSION)\"" -I. -I"$dir/gen")
"$cc" "${flags[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -o "$dir/fuzz_wire" tests/fuzz/fuzz_wire.c "${srcs[@]}" -lprotobuf-c
"$cc" "${flags[@]}" -o "$dir/seed_wire" tests/fuzz/seed_wire.c "${srcs[@]}" -lprotobuf-c
"$dir/seed_wire" "$dir/seeds"

# New inputs go to $dir/corpus (kept between runs); the seeds are read only.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec "$dir/fuzz_wire" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -dict=tests/fuzz/wire.dict -use_value_profile=1 -print_final_stats=1 -artifact_prefix="$dir/crashes/" \
    "$@" "$dir/corpus" "$dir/seeds"
