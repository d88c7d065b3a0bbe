#!/usr/bin/env bash
# The VM test lane (`make test-vm`; test/run.sh's "vm" lane): installs the
# lane's packages, builds OUTDIR if needed, boots a VM (test/vm/vm_run.sh)
# and runs the test/vm/tests/*.sh inside it (test/vm/guest_run_tests.sh).
# The tests named in GGA_VM_K612_TESTS (default: linux_host_auth.sh
# gga_host_nvmet_auth.sh, the NVMe in-band authentication tests: Debian 12's
# default kernel, 6.1, has no CONFIG_NVME_AUTH / CONFIG_NVME_TARGET_AUTH) run
# in a second VM booted with Debian 12's 6.12 kernel, the newest
# linux-image-6.12.*+deb12-amd64 (GGA_VM_K612_PKG names another), cached in
# the kernel cache's kernel-6.12/ directory; the other tests run in the
# default-kernel VM as before. A VM boots only when a test of it is to run
# (GGA_TEST_FILTER). When the 6.12 kernel cannot be had, its tests are
# reported as skipped, with the reason.
# Prints a line per test and ends with one "SUMMARY passed=N failed=N
# skipped=N" over both VMs (counting checks, like test/integration/run.sh).
# When a VM cannot run on this machine it prints "skip: reason" and counts it
# as skipped (1 for the default VM, one per test for the 6.12 one).
#
#   test/vm/run_tests.sh [OUTDIR]          (default: build/)
#
# Environment: GGA_TEST_FILTER=WORD (only tests whose name contains WORD),
# GGA_VM_MEM (MiB, default 2048), GGA_VM_TIMEOUT (whole default VM, default
# 900 s), GGA_VM_K612_TIMEOUT (whole 6.12 VM, default 600 s),
# GGA_VM_TEST_TIMEOUT (per test, default 300 s), GGA_VM_LOG_DIR (keep the
# console log, guest dmesg and output there; the 6.12 VM's in its k612/).
# When an ASan+UBSan build exists (build-asan/, as `make test` leaves it;
# GGA_VM_ASAN_OUT names another), the RDMA tests in GGA_VM_ASAN_TESTS
# (default: linux_host_rdma.sh rdma_gga_to_gga.sh) run once more against it
# in the default VM: the RDMA code runs nowhere else. GGA_VM_ASAN_OUT=none
# turns that off.
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

# Which VM runs which test. GGA_VM_TESTS_DIR is a guest path (the host's
# root is at /run/gga-vm/host there).
tests_dir=${GGA_VM_TESTS_DIR:-$root/test/vm/tests}
tests_dir=${tests_dir#/run/gga-vm/host}
k612_names=${GGA_VM_K612_TESTS-"linux_host_auth.sh gga_host_nvmet_auth.sh"}
default_tests=()
k612_tests=()
for t in "$tests_dir"/*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t")
	if [ -n "${GGA_TEST_FILTER:-}" ] && [[ "$name" != *"$GGA_TEST_FILTER"* ]]; then
		continue
	fi
	if [[ " $k612_names " == *" $name "* ]]; then
		k612_tests+=("$name")
	else
		default_tests+=("$name")
	fi
done

passed=0
failed=0
skipped=0
# add_summary FILE: add the counts of FILE's "SUMMARY ..." line to the totals.
add_summary() {
	local p f s
	read -r p f s < <(awk -F'[= ]' '/^SUMMARY /{print $3, $5, $7; exit}' "$1")
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	skipped=$((skipped + ${s:-0}))
}

# run_vm LABEL TIMEOUT LOGDIR [VAR=VALUE...]: one VM running
# guest_run_tests.sh, its output streamed (its SUMMARY line relabelled) and
# counted into the totals. Returns vm_run.sh's exit status; the reason of a
# skip (77) is left in $vm_skip_reason.
run_vm() {
	local label=$1 timeout=$2 logdir=$3 rc start secs
	shift 3
	local log_args=()
	[ -n "$logdir" ] && log_args=(--log-dir "$logdir")
	start=$(date +%s)
	env "$@" bash test/vm/vm_run.sh --mem "${GGA_VM_MEM:-2048}" --timeout "$timeout" \
		"${log_args[@]}" -- bash test/vm/guest_run_tests.sh "$out" |
		tee "$results" | sed -u "s/^SUMMARY /vm lane [$label]: /"
	rc=${PIPESTATUS[0]}
	secs=$(($(date +%s) - start))
	vm_skip_reason=
	if [ "$rc" -eq 77 ]; then
		vm_skip_reason=$(grep -m1 '^skip: ' "$results" | cut -c7-)
		vm_skip_reason=${vm_skip_reason:-VM cannot run here}
		return 77
	fi
	if ! grep -q '^SUMMARY ' "$results"; then
		echo "FAIL vm lane [$label]: the VM run ended without a summary (vm_run.sh exit $rc after ${secs}s; see above)"
		failed=$((failed + 1))
		return "$rc"
	fi
	echo "vm lane [$label]: ${secs}s in the VM (vm_run.sh exit $rc)"
	add_summary "$results"
	if [ "$rc" -ne 0 ] && grep -q '^SUMMARY passed=[0-9]* failed=0 ' "$results"; then
		# Every test passed but the runner itself did not exit cleanly.
		echo "FAIL vm lane [$label]: the test runner exited with $rc"
		failed=$((failed + 1))
	fi
	return "$rc"
}

# ---- the default-kernel VM ------------------------------------------------
# It boots unless the filter picked 6.12 tests only (a filter matching
# nothing at all still boots it, as before: the ASan runs ignore the filter).
if [ ${#default_tests[@]} -gt 0 ] || [ ${#k612_tests[@]} -eq 0 ]; then
	asan_out=${GGA_VM_ASAN_OUT:-$root/build-asan}
	if [ "$asan_out" != none ] && [ -x "$asan_out/bin/gga_tgt" ] && [ -x "$asan_out/bin/bdevperf" ]; then
		asan_env=(GGA_VM_ASAN_OUT="$asan_out"
			GGA_VM_ASAN_TESTS="${GGA_VM_ASAN_TESTS:-"linux_host_rdma.sh rdma_gga_to_gga.sh"}")
		echo "vm lane: the RDMA tests run again with the ASan+UBSan build in $asan_out"
	else
		asan_env=(-u GGA_VM_ASAN_OUT)
		echo "vm lane: no ASan+UBSan build to run the RDMA tests with (build-asan/; make test builds it)"
	fi
	run_vm "default kernel" "${GGA_VM_TIMEOUT:-900}" "${GGA_VM_LOG_DIR:-}" \
		"${asan_env[@]}" GGA_VM_TESTS="${default_tests[*]}"
	if [ $? -eq 77 ]; then
		skipped=$((skipped + 1))
		echo "vm lane skipped: $vm_skip_reason"
	fi
fi

# ---- the 6.12 VM (NVMe in-band authentication) ----------------------------
k612_cache=${GGA_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/gga-vm}/kernel-6.12

# k612_pkg: prints "PACKAGE HOW". The package resolved within the last week
# (asking apt costs seconds; HOW "cached"), else what linux-image-6.12-amd64
# depends on or the newest linux-image-6.12.N+deb12-amd64 apt knows ("apt"),
# else (offline, no package lists) the newest cached one ("cached").
k612_pkg() {
	local pkg
	if [ -n "${GGA_VM_K612_PKG:-}" ]; then
		echo "$GGA_VM_K612_PKG given"
		return
	fi
	if [ -n "$(find "$k612_cache/pkg" -mtime -7 2>/dev/null)" ]; then
		pkg=$(cat "$k612_cache/pkg")
		if [ -n "$pkg" ] && [ -f "$k612_cache/$pkg/ready" ]; then
			echo "$pkg cached"
			return
		fi
	fi
	pkg=$(apt-cache depends linux-image-6.12-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.12\..*-amd64$/ {print $2; exit}')
	[ -n "$pkg" ] || pkg=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' 2>/dev/null |
		awk '{print $1}' | sort -V | tail -1)
	if [ -n "$pkg" ]; then
		echo "$pkg apt"
		return
	fi
	pkg=$(ls -dt "$k612_cache"/linux-image-6.12*/ready 2>/dev/null | head -1)
	pkg=${pkg%/ready}
	[ -n "$pkg" ] && echo "${pkg##*/} cached"
}

# k612_skip REASON: every 6.12 test is skipped, each on a line of its own.
k612_skip() {
	local name
	echo "vm lane: the 6.12 VM is skipped: $*"
	for name in "${k612_tests[@]}"; do
		echo "SKIP $name: $*"
		skipped=$((skipped + 1))
	done
}

if [ ${#k612_tests[@]} -gt 0 ]; then
	mkdir -p "$k612_cache" 2>/dev/null
	read -r pkg how < <(k612_pkg)
	if [ -z "${pkg:-}" ]; then
		k612_skip "no Debian 6.12 kernel: apt knows no linux-image-6.12-amd64 (offline or no package lists; apt-get update) and none is cached in $k612_cache"
	else
		echo "vm lane: ${k612_tests[*]} in a second VM with $pkg (NVMe in-band authentication)"
		k612_log=
		[ -n "${GGA_VM_LOG_DIR:-}" ] && k612_log=$GGA_VM_LOG_DIR/k612
		run_vm "$pkg" "${GGA_VM_K612_TIMEOUT:-600}" "$k612_log" -u GGA_VM_ASAN_OUT \
			GGA_VM_CACHE="$k612_cache" GGA_VM_KERNEL_PKG="$pkg" GGA_VM_TESTS="${k612_tests[*]}"
		if [ $? -eq 77 ]; then
			k612_skip "$vm_skip_reason"
		fi
		# Remember what apt said for a week.
		if [ "$how" = apt ] && [ -f "$k612_cache/$pkg/ready" ]; then
			echo "$pkg" >"$k612_cache/pkg"
		fi
	fi
fi

echo "SUMMARY passed=$passed failed=$failed skipped=$skipped"
[ "$failed" -eq 0 ]
}
