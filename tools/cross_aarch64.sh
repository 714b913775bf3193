#!/usr/bin/env bash
# tools/cross_aarch64.sh -- the C core built for Linux on AArch64 (the NEON
# path) and its C tests run under qemu-user, on this x86-64 machine.
#
#   1. every csrc/core file compiled with Debian's aarch64-linux-gnu-gcc at
#      -O3 and -O1 (-Wall -Wextra -Werror: no warning allowed), once with
#      -ffp-contract=off (what setup.py uses; -O3) and once with gcc's
#      default for AArch64 (contracting a*b+c into FMAs; -O1) to see that
#      it compiles clean either way
#   2. tools/c_smoke.c and the tests/c programs, linked with the -O3
#      objects (the core is compiled once for them), statically, run
#      under qemu-aarch64 with their short default arguments: the NEON
#      and portable paths (tiled and decode kernels, exp) against the C
#      oracle, bitwise over thread counts. qemu-user cannot run a thread
#      in a forked child of a threaded process (its own assertion): that
#      one case runs single-threaded (ATTNPY_TEST_QEMU_USER, test_core.c).
# Correctness only: qemu says nothing about speed on ARM hardware.
# Installs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user
# with apt-get when missing. Exits nonzero on any warning or failure.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/_cross.sh"
need_tools gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user -- \
    aarch64-linux-gnu-gcc qemu-aarch64
CC=aarch64-linux-gnu-gcc
OUT=$(mktemp -d "${TMPDIR:-/tmp}/attnpy-a64.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

# (-O1 with gcc's default contraction; -O3 with setup.py's
# -ffp-contract=off and the tests' ATTN_MATH_ROWS: the programs link it)
compile_core_clean "$OUT/o1" "$CC" -std=c11 -Wall -Wextra -O1
compile_core_clean "$OUT/o3" "$CC" -std=gnu11 -Wall -Wextra -O3 \
    -fno-strict-aliasing -ffp-contract=off -DATTN_MATH_ROWS=1
CORE_OBJS=$(core_objs "$OUT/o3/obj")
export CORE_OBJS
# -fno-tree-vectorize: Debian's aarch64 gcc 12 crashes (internal compiler
# error in vect_transform_reduction) on tests/c/test_variants.c at -O2
export CC CROSS_FLAGS="-O2 -fno-tree-vectorize -Werror -static -ffp-contract=off"
ATTNPY_TEST_QEMU_USER=1 run_c_tests "$OUT" qemu-aarch64
echo "cross_aarch64.sh: OK"
