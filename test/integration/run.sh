#!/usr/bin/env bash
# Run every test/integration/*.sh against the binaries in OUTDIR/bin.
# Each script prints "ok - ..." / "not ok - ..." per check and exits 0 (all
# passed), 77 (skipped; it printed why) or non-zero. Prints a final
# "SUMMARY passed=N failed=N skipped=N" line counting checks, after a
# "TIME integration Ns" line (all tests; each PASS/FAIL line has its own).
set -u
out=${1:?usage: test/integration/run.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
passed=0
failed=0
skipped=0
log=$(mktemp /tmp/gga-it.XXXXXX)
trap 'rm -f "$log"' EXIT
all_start=$SECONDS

# sweep_tagged TAG: SIGKILL the processes whose environment has
# GGA_TEST_TAG=TAG; prints how many there were.
sweep_tagged() {
	local env pid n=0
	for env in /proc/[0-9]*/environ; do
		pid=${env#/proc/}
		pid=${pid%/environ}
		[ "$pid" != $$ ] || continue
		if grep -qxzF "GGA_TEST_TAG=$1" "$env" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null && n=$((n + 1))
		fi
	done
	echo "$n"
}

for t in "$here"/*.sh; do
	name=$(basename "$t")
	case "$name" in run.sh | common.sh | *_lib.sh) continue ;; esac
	# GGA_TEST_FILTER: space-separated substrings; a test runs if its name has one.
	if [ -n "${GGA_TEST_FILTER:-}" ]; then
		want=0
		for f in $GGA_TEST_FILTER; do
			[[ "$name" == *"$f"* ]] && want=1
		done
		[ $want -eq 1 ] || continue
	fi
	start=$(date +%s)
	# Every process the test starts inherits the tag: whatever is left of them
	# once it is over (a test killed by the timeout cannot clean up) is
	# killed here, so one test's daemons never load the next ones.
	tag="$name.$$.$start"
	GGA_TEST_TAG=$tag GGA_BUILD=$out timeout -k 10 900 bash "$t" >"$log" 2>&1
	rc=$?
	left=$(sweep_tagged "$tag")
	[ "$left" -eq 0 ] || echo "  note: $name left $left process(es) running; killed"
	secs=$(($(date +%s) - start))
	ok=$(grep -c '^ok - ' "$log")
	nok=$(grep -c '^not ok - ' "$log")
	if [ $rc -eq 77 ]; then
		echo "SKIP $name: $(grep -m1 '^skip: ' "$log" | cut -c7-)"
		skipped=$((skipped + 1))
		continue
	fi
	if [ $rc -ne 0 ] && [ "$nok" -eq 0 ]; then
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
		tail -40 "$log" | sed 's/^/  | /'
	else
		echo "PASS $name ($ok checks, ${secs}s)"
	fi
done
echo "TIME integration $((SECONDS - all_start))s"
echo "SUMMARY passed=$passed failed=$failed skipped=$skipped"
