#!/usr/bin/env bash
# `make test`: install missing packages, configure and build as needed, then
# run every test twice: in the normal build (build/) and in an ASan+UBSan
# build (build-asan/), then the VM lane (test/vm/run_tests.sh: SoftRoCE and
# Linux-host NVMe-oF tests in a qemu VM, on the normal build; it skips with a
# reason when the machine cannot run the VM), and a build without RDMA
# (build-nordma/, as `configure --without-rdma`: unit tests and the TCP
# integration tests). GGA_TEST_LANES selects lanes (default
# "normal asan nordma vm"). Each phase ends with "=== lane L: PHASE took Ns";
# the end lists "TIME L build=Ns unit=Ns integration=Ns total=Ns" per lane
# and "TIME make test Ns" (the budget is 2700 s, docs/TESTING.md), then one
# summary line "N passed, N failed".
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

jobs=${GGA_TEST_JOBS:-2}
lanes=${GGA_TEST_LANES:-"normal asan nordma vm"}
# The libFuzzer harnesses (fuzz.sh, normal lane): compiled and fuzzed
# $jobs at a time.
export GGA_FUZZ_JOBS=${GGA_FUZZ_JOBS:-$jobs}

# --fuzz: clang, for the libFuzzer harnesses (test/integration/fuzz.sh).
bash scripts/pkgdep.sh --fuzz || {
	echo "test: scripts/pkgdep.sh failed (run it as root)" >&2
	exit 1
}
if [ ! -f mk/config.mk ]; then
	./configure || exit 1
fi

results=$(mktemp -d /tmp/gga-test-results.XXXXXX)
trap 'rm -rf "$results"' EXIT

total_pass=0
total_fail=0
total_skip=0
run_start=$SECONDS
normal_unit_ran=""
times=""

# phase_done LANE PHASE START: print and record how long PHASE took.
phase_done() {
	local t=$((SECONDS - $3))
	echo "=== lane $1: $2 took ${t}s"
	lane_times="$lane_times $2=${t}s"
}

# run_lane NAME OUTDIR [make args...]
run_lane() {
	local name=$1 out=$2 rc lane_start=$SECONDS t0
	shift 2
	lane_times=""
	echo "=== lane $name: building into $out"
	t0=$SECONDS
	if ! make -j"$jobs" O="$out" "$@" build unittests >"$results/$name-build.log" 2>&1; then
		tail -50 "$results/$name-build.log"
		echo "FAIL $name: build failed"
		total_fail=$((total_fail + 1))
		return
	fi
	phase_done "$name" build "$t0"
	echo "=== lane $name: unit tests"
	t0=$SECONDS
	GGA_UNIT_JOBS=$jobs GGA_UNIT_SAME_AS=${unit_same_as:-} bash test/unit/run.sh "$out" | tee "$results/$name-unit.log"
	phase_done "$name" unit "$t0"
	[ "$name" != normal ] || normal_unit_ran=1
	echo "=== lane $name: integration tests"
	t0=$SECONDS
	GGA_LANE=$name bash test/integration/run.sh "$out" | tee "$results/$name-integration.log"
	phase_done "$name" integration "$t0"
	times="${times}TIME $name$lane_times total=$((SECONDS - lane_start))s"$'\n'
	local p f s
	read -r p f s < <(cat "$results/$name-unit.log" "$results/$name-integration.log" |
		awk -F'[= ]' '/^SUMMARY /{p += $3; f += $5; s += $7} END {print p + 0, f + 0, s + 0}')
	echo "=== lane $name: ${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
	total_pass=$((total_pass + ${p:-0}))
	total_fail=$((total_fail + ${f:-0}))
	total_skip=$((total_skip + ${s:-0}))
}

for lane in $lanes; do
	case "$lane" in
	normal)
		# The fuzzers' random parts are longest under ASan (it sees what
		# they break in memory); here 10 s each, the kept cases in full.
		# make fuzz runs them for 10 minutes.
		GGA_CONN_FUZZ_SECONDS=${GGA_CONN_FUZZ_SECONDS:-10} \
			GGA_RPC_FUZZ_SECONDS=${GGA_RPC_FUZZ_SECONDS:-10} \
			run_lane normal "$root/build"
		;;
	asan)
		export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:halt_on_error=1}
		export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
		# The sanitizer build also carries the test hooks (test_reactor_stall).
		# The fuzzers' random parts: 20 s (connections), 30 s (RPC).
		# The model checkers walk one level less deep here than in the
		# normal lane where their walks are longest (ASan makes them 3 to 5
		# times slower): gga_front's 2 + 1 walks to 9 and its liveness walk
		# to 8, gga_lifecycle's 4 + 2 to 4 (its 2 + 1 walk and every "found"
		# test keep their depths).
		GGA_CONN_FUZZ_SECONDS=${GGA_CONN_FUZZ_SECONDS:-20} \
			GGA_RPC_FUZZ_SECONDS=${GGA_RPC_FUZZ_SECONDS:-30} \
			GGA_FRONT_DEPTH=${GGA_FRONT_DEPTH:-9} \
			GGA_LIVE_DEPTH=${GGA_LIVE_DEPTH:-8} \
			GGA_LC_DEPTH_42=${GGA_LC_DEPTH_42:-4} \
			run_lane asan "$root/build-asan" CONFIG_ASAN=y CONFIG_TEST_HOOKS=y
		unset ASAN_OPTIONS UBSAN_OPTIONS
		;;
	nordma)
		# `./configure --without-rdma` must still build and serve NVMe/TCP:
		# unit tests and the TCP-facing integration tests in such a build
		# (the connection fuzzer's kept cases, and 5 s of its random part:
		# the other lanes fuzz longer).
		# Unit binaries byte-identical to the normal lane's (all but the few
		# that CONFIG_RDMA changes) ran there already in this run.
		nordma_same=""
		[ -z "$normal_unit_ran" ] || nordma_same=$root/build
		GGA_TEST_FILTER="tcp topology demo save_config rpc_bad_input daemon_rpc" \
			GGA_CONN_FUZZ_SECONDS=${GGA_CONN_FUZZ_SECONDS:-5} \
			unit_same_as=$nordma_same \
			run_lane nordma "$root/build-nordma" CONFIG_RDMA=n
		;;
	vm)
		# The VM runs the normal build's binaries (run_tests.sh builds
		# them when they are missing).
		echo "=== lane vm: SoftRoCE / Linux-host interop tests in a qemu VM"
		lane_times=""
		t0=$SECONDS
		bash test/vm/run_tests.sh "$root/build" | tee "$results/vm.log"
		phase_done vm "vm" "$t0"
		times="${times}TIME vm total=$((SECONDS - t0))s"$'\n'
		read -r p f s < <(awk -F'[= ]' '/^SUMMARY /{p += $3; f += $5; s += $7} END {print p + 0, f + 0, s + 0}' "$results/vm.log")
		echo "=== lane vm: ${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
		total_pass=$((total_pass + ${p:-0}))
		total_fail=$((total_fail + ${f:-0}))
		total_skip=$((total_skip + ${s:-0}))
		;;
	*)
		echo "test: unknown lane '$lane'" >&2
		total_fail=$((total_fail + 1))
		;;
	esac
done

echo
printf '%s' "$times"
echo "TIME make test $((SECONDS - run_start))s (budget 2700s)"
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ] && [ "$total_pass" -gt 0 ]
