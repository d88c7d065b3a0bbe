#!/usr/bin/env bash
# The VM test lane (`make test-vm`; test/run.sh's "vm" lane): installs the
# lane's packages, builds OUTDIR if needed, boots ONE VM (test/vm/vm_run.sh)
# and runs every test/vm/tests/*.sh inside it (test/vm/guest_run_tests.sh).
# Prints a line per test and ends with "SUMMARY passed=N failed=N skipped=N"
# (counting checks, like test/integration/run.sh). When the VM cannot run on
# this machine it prints "skip: reason" and a SUMMARY with skipped=1.
#
#   test/vm/run_tests.sh [OUTDIR]          (default: build/)
#
# Environment: GGA_TEST_FILTER=WORD (only tests whose name contains WORD),
# GGA_VM_MEM (MiB, default 2048), GGA_VM_TIMEOUT (whole VM, default 900 s),
# GGA_VM_TEST_TIMEOUT (per test, default 300 s), GGA_VM_LOG_DIR (keep the
# console log, guest dmesg and output there). When an ASan+UBSan build exists
# (build-asan/, as `make test` leaves it; GGA_VM_ASAN_OUT names another),
# the RDMA tests in GGA_VM_ASAN_TESTS (default: linux_host_rdma.sh
# rdma_gga_to_gga.sh) run once more against it: the RDMA code runs nowhere
# else. GGA_VM_ASAN_OUT=none turns that off.
set -u
# One block, read before it runs: edits to this file cannot break a run.
{
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
out=${1:-$root/build}
out=$(mkdir -p "$out" && cd "$out" && pwd)

summary_skip() {
	echo "skip: $*"
	echo "SUMMARY passed=0 failed=0 skipped=1"
	exit 0
}

summary_fail() {
	echo "FAIL vm lane: $*"
	echo "SUMMARY passed=0 failed=1 skipped=0"
	exit 1
}

if ! bash scripts/pkgdep.sh --vm; then
	summary_skip "scripts/pkgdep.sh --vm could not install the VM packages (run it as root)"
fi
if [ ! -x "$out/bin/gga_tgt" ] || [ ! -x "$out/bin/bdevperf" ] || [ ! -x "$out/bin/gga_rpc" ]; then
	echo "vm lane: building into $out"
	make -j"${GGA_TEST_JOBS:-2}" O="$out" build >"$out/vm-lane-build.log" 2>&1 || {
		tail -30 "$out/vm-lane-build.log"
		summary_fail "make build failed"
	}
fi

results=$(mktemp /tmp/gga-vm-lane.XXXXXX)
trap 'rm -f "$results"' EXIT
log_args=()
[ -n "${GGA_VM_LOG_DIR:-}" ] && log_args=(--log-dir "$GGA_VM_LOG_DIR")

asan_out=${GGA_VM_ASAN_OUT:-$root/build-asan}
if [ "$asan_out" != none ] && [ -x "$asan_out/bin/gga_tgt" ] && [ -x "$asan_out/bin/bdevperf" ]; then
	export GGA_VM_ASAN_OUT=$asan_out
	export GGA_VM_ASAN_TESTS=${GGA_VM_ASAN_TESTS:-"linux_host_rdma.sh rdma_gga_to_gga.sh"}
	echo "vm lane: the RDMA tests run again with the ASan+UBSan build in $asan_out"
else
	unset GGA_VM_ASAN_OUT
	echo "vm lane: no ASan+UBSan build to run the RDMA tests with (build-asan/; make test builds it)"
fi

start=$(date +%s)
bash test/vm/vm_run.sh --mem "${GGA_VM_MEM:-2048}" --timeout "${GGA_VM_TIMEOUT:-900}" \
	"${log_args[@]}" -- bash test/vm/guest_run_tests.sh "$out" | tee "$results"
rc=${PIPESTATUS[0]}
secs=$(($(date +%s) - start))

if [ "$rc" -eq 77 ]; then
	reason=$(grep -m1 '^skip: ' "$results" | cut -c7-)
	echo "SUMMARY passed=0 failed=0 skipped=1"
	echo "vm lane skipped: ${reason:-VM cannot run here}"
	exit 0
fi
if ! grep -q '^SUMMARY ' "$results"; then
	summary_fail "the VM run ended without a summary (vm_run.sh exit $rc after ${secs}s; see above)"
fi
echo "vm lane: ${secs}s in the VM (vm_run.sh exit $rc)"
if [ "$rc" -ne 0 ] && grep -q '^SUMMARY passed=[0-9]* failed=0 ' "$results"; then
	# Every test passed but the runner itself did not exit cleanly.
	echo "SUMMARY passed=0 failed=1 skipped=0"
	exit 1
fi
grep -q '^SUMMARY passed=[0-9]* failed=0 ' "$results"
}
