#!/usr/bin/env bash
# Inside the test VM: run every test/vm/tests/*.sh against the binaries in
# OUTDIR/bin, each bounded by GGA_VM_TEST_TIMEOUT seconds (default 300).
# Each test prints "ok - ..." / "not ok - ..." per check and exits 0 (all
# passed), 77 (skipped; it printed "skip: why") or non-zero. Prints a line per
# test and a final "SUMMARY passed=N failed=N skipped=N" counting checks, like
# test/integration/run.sh. GGA_TEST_FILTER=WORD runs only tests whose file
# name contains WORD; GGA_VM_TESTS_DIR runs the tests of another directory.
# Started by test/vm/run_tests.sh through vm_run.sh.
set -u
# One block, read before it runs: edits to this file cannot break a run.
{
out=${1:?usage: test/vm/guest_run_tests.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
limit=${GGA_VM_TEST_TIMEOUT:-300}
passed=0
failed=0
skipped=0
log=$(mktemp /tmp/gga-vmt.XXXXXX)
trap 'rm -f "$log"' EXIT

if [ ! -f /run/gga-vm/guest ]; then
	echo "guest_run_tests: not inside the test VM (use test/vm/run_tests.sh)" >&2
	exit 2
fi

for t in "${GGA_VM_TESTS_DIR:-$here/tests}"/*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t")
	if [ -n "${GGA_TEST_FILTER:-}" ] && [[ "$name" != *"$GGA_TEST_FILTER"* ]]; then
		continue
	fi
	start=$(date +%s)
	GGA_BUILD=$out timeout -k 10 "$limit" bash "$t" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	ok=$(grep -c '^ok - ' "$log")
	nok=$(grep -c '^not ok - ' "$log")
	if [ $rc -eq 77 ]; then
		echo "SKIP $name: $(grep -m1 '^skip: ' "$log" | cut -c7-) (${secs}s)"
		skipped=$((skipped + 1))
		continue
	fi
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "  $name did not finish within ${limit}s"
		nok=$((nok + 1))
	elif [ $rc -ne 0 ] && [ "$nok" -eq 0 ]; then
		nok=1
	fi
	if [ "$ok" -eq 0 ] && [ "$nok" -eq 0 ]; then
		nok=1
		echo "  $name checked nothing"
	fi
	passed=$((passed + ok))
	failed=$((failed + nok))
	if [ "$nok" -ne 0 ]; then
		echo "FAIL $name (exit $rc, $ok ok, $nok not ok, ${secs}s)"
		grep -E '^not ok - ' "$log"
		echo "  --- last lines of output:"
		tail -60 "$log" | sed 's/^/  | /'
	else
		echo "PASS $name ($ok checks, ${secs}s)"
	fi
	# A test that failed half-way may leave kernel state behind; do not let
	# it leak into the next one.
	nvme disconnect-all >/dev/null 2>&1
done
echo "SUMMARY passed=$passed failed=$failed skipped=$skipped"
}
