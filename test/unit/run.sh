#!/usr/bin/env bash
# Run every CUnit test binary under OUTDIR/test/unit and count test cases.
# Prints "PASS|FAIL <binary> (N tests, S.Ss)" per binary (S.S: its wall-clock
# seconds), a "TIME unit N.Ns" line (all binaries) and a final
# "SUMMARY passed=N failed=N skipped=0" line (test cases, not binaries).
# GGA_UNIT_JOBS=N (default 1; make test: GGA_TEST_JOBS, 2) runs N binaries
# at a time, reported in the same order; each binary is one process with no
# fixed file, socket or port, and the gga tests wait much of their time on
# the module's timers, so two at a time nearly halve the phase.
# GGA_UNIT_SAME_AS=DIR: a binary byte-identical to DIR/test/unit/<same path>
# is not run again ("SAME <binary>"): test/run.sh sets it in the nordma lane
# to the normal lane's tree, run just before (most binaries do not depend on
# CONFIG_RDMA and link to the same bytes).
set -u
out=${1:?usage: test/unit/run.sh OUTDIR}
same_as=${GGA_UNIT_SAME_AS:-}
jobs=${GGA_UNIT_JOBS:-1}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || jobs=1
same=0
passed=0
failed=0
found=0
work=$(mktemp -d /tmp/gga-ut.XXXXXX)
pids=()
# On an early exit (^C), stop the binaries still running, then clean up.
trap 'for p in "${pids[@]}"; do kill -- "$p" 2>/dev/null; done; wait; rm -rf "$work"' EXIT

# now_ms: wall-clock milliseconds. secs MS: MS as seconds with one decimal.
now_ms() { echo $(($(date +%s%N) / 1000000)); }
secs() { printf '%d.%d' $(($1 / 1000)) $((($1 % 1000) / 100)); }
all_start=$(now_ms)

bins=()
while IFS= read -r bin; do
	found=$((found + 1))
	name=${bin#"$out"/test/unit/}
	if [ -n "$same_as" ] && cmp -s "$bin" "$same_as/test/unit/$name"; then
		echo "SAME $name (identical to $same_as/test/unit/$name, which ran)"
		same=$((same + 1))
		continue
	fi
	bins+=("$bin")
done < <(find "$out/test/unit" -type f -name '*_ut' -perm -u+x 2>/dev/null | sort)

# start I: run binary I in the background: its output in $work/I.log, its
# exit status and milliseconds in $work/I.rc.
start() {
	(
		t0=$(now_ms)
		timeout -k 10 600 "${bins[$1]}" >"$work/$1.log" 2>&1
		rc=$?
		echo "$rc $(($(now_ms) - t0))" >"$work/$1.rc"
	) &
	pids[$1]=$!
}

# report I: count and print binary I's result (it has ended).
report() {
	local i=$1 bin=${bins[$1]} log=$work/$1.log name rc ms took row ran p f
	name=${bin#"$out"/test/unit/}
	read -r rc ms <"$work/$i.rc" 2>/dev/null || {
		rc=1
		ms=0
	}
	took=$(secs "$ms")
	# CUnit's summary row: "tests  <total> <ran> <passed> <failed> <inactive>"
	row=$(awk '$1 == "tests" && NF >= 5 {print $3, $4, $5}' "$log" | tail -1)
	ran=0 p=0 f=0
	if [ -n "$row" ]; then
		read -r ran p f <<<"$row"
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# Crashed, sanitizer abort or timeout: the binary counts as one failure.
		f=$((f + 1))
	fi
	if [ "$ran" -eq 0 ] && [ "$rc" -eq 0 ]; then
		echo "FAIL $name: ran no test"
		f=$((f + 1))
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -ne 0 ]; then
		echo "FAIL $name (exit $rc, $p passed, $f failed, ${took}s)"
		grep -E -i 'fail|error|assert|sanitizer|runtime error' "$log" | head -40
		tail -20 "$log"
	else
		echo "PASS $name ($p tests, ${took}s)"
	fi
	rm -f "$log"
}

# Up to $jobs binaries running; results reported in order as they end.
next=0
started=0
while [ $next -lt ${#bins[@]} ]; do
	while [ $started -lt ${#bins[@]} ] && [ $((started - next)) -lt "$jobs" ]; do
		start $started
		started=$((started + 1))
	done
	wait "${pids[$next]}"
	unset "pids[$next]"
	report $next
	next=$((next + 1))
done

if [ $found -eq 0 ]; then
	echo "FAIL no unit test binaries under $out/test/unit"
	failed=$((failed + 1))
fi
[ $same -eq 0 ] || echo "$same of $found binaries identical to ${same_as}'s, not run again"
echo "TIME unit $(secs $(($(now_ms) - all_start)))s"
echo "SUMMARY passed=$passed failed=$failed skipped=0"
