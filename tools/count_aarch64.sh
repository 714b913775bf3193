#!/usr/bin/env bash
# tools/count_aarch64.sh [S] -- the instructions a decoding call executes
# on AArch64, per key, counted under qemu-user (which cannot time it).
#
# Builds the core for AArch64 as setup.py does (-O3, -ffp-contract=off)
# and tools/count_decode.c, runs one decoding call of a (1, 1, 1, 128)
# query row against S keys (default 4096) for each of the sets neon and
# portable and the dtypes float32, float16 and bfloat16, with qemu's log
# of every translated block and every block run, and prints the
# instructions run inside attnpy's kernels (functions named *_neon_* or
# *_port_*) per key, with the three largest. An instruction count is a
# proxy for time, not a measurement of it: run it on two checkouts to
# compare them.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/_cross.sh"
need_tools gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user -- \
    aarch64-linux-gnu-gcc qemu-aarch64
S=${1:-4096}
CC=aarch64-linux-gnu-gcc
OUT=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-count.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
compile_core_clean "$OUT/o3" "$CC" -std=gnu11 -Wall -Wextra -O3 \
    -fno-strict-aliasing -ffp-contract=off
# shellcheck disable=SC2046
"$CC" -std=gnu11 -O2 -Wall -Wextra -Werror -static -I"$ROOT/csrc/core" \
    "$ROOT/tools/count_decode.c" $(core_objs "$OUT/o3/obj") -lm -lpthread \
    -o "$OUT/count_decode"
echo "instructions per key of one decoding call, (1, 1, 1, 128) x S = $S," \
     "1 thread, $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" \
     diff --quiet HEAD -- csrc 2>/dev/null || echo ' + changes')"
for set in neon portable; do
    for dt in float32 float16 bfloat16; do
        qemu-aarch64 -d in_asm,exec,nochain -D "$OUT/log" \
            "$OUT/count_decode" "$set" "$dt" "$S" >/dev/null
        python3 - "$OUT/log" "$set" "$dt" "$S" <<'PY'
import collections, re, sys
log, set_, dt, S = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
size, sym_of, runs = {}, {}, collections.Counter()
start, sym = None, "?"
with open(log, errors="replace") as f:
    for line in f:
        if line.startswith("IN:"):      # a translated block: its symbol
            sym, start = line[3:].strip() or "?", None
        elif re.match(r"0x[0-9a-f]+:\s", line):   # one of its instructions
            if start is None:
                start = int(line.split(":")[0], 16)
                size[start], sym_of[start] = 0, sym
            size[start] += 1
        elif not line.strip():
            start = None
        else:                            # a block run: Trace n: host [../pc/..]
            m = re.search(r"Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/", line)
            if m:
                runs[int(m.group(1), 16)] += 1
per = collections.Counter()
for pc, n in runs.items():
    s = sym_of.get(pc, "?")
    if re.search(r"_(neon|port)_f(32|64)$", s):
        per[s] += n * size.get(pc, 0)
top = ", ".join("%s %.0f" % (s, n / S) for s, n in per.most_common(3))
print("  %-8s %-8s %6.0f  (%s)" % (set_, dt, sum(per.values()) / S, top))
PY
    done
done
