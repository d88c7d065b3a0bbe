#!/usr/bin/env bash
# The README's demo runs and prints a results table (short run, no rebuild).
source "$(dirname "$0")/common.sh"
GGA_BUILD=$GGA_BUILD timeout -k 5 120 bash "$GGA_ROOT/scripts/demo.sh" --no-build -t 1 >"$TMP/demo.out" 2>&1
rc=$?
check "demo exits 0 (exit $rc)" test $rc -eq 0
# A failed demo shows what it printed (the verify line, bdevperf's reason).
[ $rc -eq 0 ] || sed 's/^/  demo: /' "$TMP/demo.out"
check "demo prints the bdevperf Total row" grep -q '^Total' "$TMP/demo.out"
check "demo shut gga_tgt down cleanly" grep -q 'gga_tgt shut down (exit 0)' "$TMP/demo.out"
finish
