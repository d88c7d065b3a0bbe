#!/usr/bin/env bash
# Inside the test VM: run every test/vm/tests/*.sh against the binaries in
# OUTDIR/bin, each bounded by GGA_VM_TEST_TIMEOUT seconds (default 300).
# Each test prints "ok - ..." / "not ok - ..." per check and exits 0 (all
# passed), 77 (skipped; it printed "skip: why") or non-zero. Prints a line per
# test and a final "SUMMARY passed=N failed=N skipped=N" counting checks, like
# test/integration/run.sh. GGA_TEST_FILTER=WORD runs only tests whose file
# name contains WORD; GGA_VM_TESTS_DIR runs the tests of another directory.
# With GGA_VM_ASAN_OUT=DIR (an ASan+UBSan build tree), the tests named in
# GGA_VM_ASAN_TESTS run a second time against DIR/bin, reported as
# "NAME [asan]": the RDMA code runs only in this VM, so this is where its
# sanitizer run happens. GGA_VM_TESTS="a.sh b.sh", when not empty, runs only
# the tests so named (run_tests.sh splits the tests between the default-kernel
# VM and the 6.12 one this way). Started by test/vm/run_tests.sh through
# vm_run.sh.
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

# run_one TEST OUTDIR NAME [VAR=VALUE...]: run one test, count and report it.
run_one() {
	local t=$1 build=$2 name=$3 rc ok nok start secs
	shift 3
	start=$(date +%s)
	env GGA_BUILD="$build" "$@" timeout -k 10 "$limit" bash "$t" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	ok=$(grep -c '^ok - ' "$log")
	nok=$(grep -c '^not ok - ' "$log")
	if [ $rc -eq 77 ]; then
		echo "SKIP $name: $(grep -m1 '^skip: ' "$log" | cut -c7-) (${secs}s)"
		skipped=$((skipped + 1))
		return
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
}

echo "guest kernel ${GGA_VM_KVER:-?}"
for t in "${GGA_VM_TESTS_DIR:-$here/tests}"/*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t")
	if [ -n "${GGA_TEST_FILTER:-}" ] && [[ "$name" != *"$GGA_TEST_FILTER"* ]]; then
		continue
	fi
	if [ -n "${GGA_VM_TESTS:-}" ] && [[ " $GGA_VM_TESTS " != *" $name "* ]]; then
		continue
	fi
	run_one "$t" "$out" "$name"
done
if [ -n "${GGA_VM_ASAN_OUT:-}" ]; then
	for name in ${GGA_VM_ASAN_TESTS:-}; do
		t=${GGA_VM_TESTS_DIR:-$here/tests}/$name
		[ -e "$t" ] || continue
		run_one "$t" "$GGA_VM_ASAN_OUT" "$name [asan]" \
			ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:halt_on_error=1 \
			UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	done
fi
echo "SUMMARY passed=$passed failed=$failed skipped=$skipped"
}
