#!/usr/bin/env bash
# Build the libFuzzer harnesses of test/fuzz/ with clang, replay their kept
# crash inputs and seed corpora, then fuzz each for a bounded time.
#
#   test/fuzz/run.sh OUTDIR [SECONDS [MIN_RUNS]]
#
# SECONDS of fuzzing per harness (default 30; 0 only builds and replays).
# GGA_FUZZ_JOBS=N (default 1; make test's fuzz.sh: GGA_TEST_JOBS, 2) compiles
# N sources at a time and fuzzes N harnesses at a time (each harness is one
# process, on a core of its own when the machine has N idle cores).
# After fuzzing it prints the executions of all harnesses together; with
# MIN_RUNS that total is a check of its own (make fuzz asks for 10 million).
#
# Binaries and objects go to OUTDIR/fuzz/. The target sources the harnesses
# need are compiled here with clang and the sanitizers (never the gcc-built
# libraries). Prints "ok - ..." / "not ok - ..." per replay and per fuzz run;
# prints "skip: ..." and exits 77 without clang. A crash, leak, timeout or
# out-of-memory input found while fuzzing is copied to
# test/fuzz/regressions/<harness>/ (replayed by every later run) and fails
# the run.
set -u
out=${1:?usage: test/fuzz/run.sh OUTDIR [SECONDS [MIN_RUNS]]}
secs=${2:-30}
min_runs=${3:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/test/fuzz
harnesses="fuzz_tcp_pdu fuzz_nvmf_cmd fuzz_tcp_conn fuzz_rdma_capsule fuzz_dhchap fuzz_tls"
CC=${FUZZ_CC:-clang}

if ! command -v "$CC" >/dev/null 2>&1; then
	echo "skip: clang not installed (scripts/pkgdep.sh --fuzz installs it)"
	exit 77
fi
case "$secs$min_runs" in
'' | *[!0-9]*)
	echo "not ok - SECONDS and MIN_RUNS must be whole numbers, not '$secs' '$min_runs'"
	exit 1
	;;
esac

jobs=${GGA_FUZZ_JOBS:-1}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || jobs=1

mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)/fuzz
obj=$out/obj
mkdir -p "$obj" || exit 1
failed=0

ok() { echo "ok - $*"; }
not_ok() {
	echo "not ok - $*"
	failed=$((failed + 1))
}

# The target core, the TCP transport, and what they run on: threads, env,
# bdev layer (with the malloc module for a namespace), RPC registration, logs.
# Built without GGA_CONFIG_RDMA, the core does not reference the RDMA
# transport; its pure capsule checks (rdma_capsule.c) need no verbs and go in.
srcs=$(cd "$root" && ls target/*.c lib/util/*.c lib/log/*.c lib/env/*.c lib/thread/*.c \
	lib/bdev/*.c lib/rpc/*.c lib/auth/*.c lib/keyring/*.c module/bdev/malloc/*.c module/bdev/bdev_module_util.c |
	grep -v -e '^target/rdma\.c' -e '^target/rdma_conn\.c')
# fuzz_rdma_capsule needs the verbs and CM headers (not the libraries).
if ! printf '#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\n' |
	"$CC" -fsyntax-only -x c - >/dev/null 2>&1; then
	echo "skip: fuzz_rdma_capsule (no verbs/CM headers: libibverbs-dev, librdmacm-dev)"
	harnesses=${harnesses/ fuzz_rdma_capsule/}
fi
cflags=(-std=gnu11 -g -O1 -fno-omit-frame-pointer -D_GNU_SOURCE -pthread
	-fsanitize=address,undefined -fno-sanitize-recover=all
	-Wall -Wextra -Wno-unused-parameter -I"$root/include" -I"$root")
libs=(-ljansson -llz4 -lisal -luring -lnuma -lssl -lcrypto -lm -pthread)

# stale OBJ DEPFILE: true if OBJ is missing or older than a file it was built from.
stale() {
	local o=$1 d=$2 dep
	[ -f "$o" ] && [ -f "$d" ] || return 0
	for dep in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$d"); do
		[ "$dep" -nt "$o" ] && return 0
	done
	return 1
}

build_log=$out/build.log
: >"$build_log"
running=0
# compile SRC OBJ [FLAGS...]: compile in the background, at most $jobs at a
# time; a failure leaves OBJ.failed and the compiler's output in OBJ.log.
compile() {
	local s=$1 o=$2
	shift 2
	if [ $running -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	rm -f "$o.failed"
	(
		"$CC" "${cflags[@]}" "$@" -fsanitize=fuzzer-no-link -MMD -MF "${o%.o}.d" \
			-c "$root/$s" -o "$o" >"$o.log" 2>&1 || echo "$s" >"$o.failed"
	) &
	running=$((running + 1))
}
objs=()
for s in $srcs; do
	o=$obj/$(echo "${s%.c}" | tr / _).o
	objs+=("$o")
	stale "$o" "${o%.o}.d" || continue
	compile "$s" "$o"
done
# The RDMA transport, for fuzz_rdma_capsule only: built with GGA_CONFIG_RDMA
# (the verbs and CM headers), linked with that harness's fake device and CM
# instead of libibverbs and librdmacm.
rdma_objs=()
rdma_srcs=
case " $harnesses " in *" fuzz_rdma_capsule "*) rdma_srcs="target/rdma.c target/rdma_conn.c" ;; esac
for s in $rdma_srcs; do
	o=$obj/rdma_cfg_$(basename "${s%.c}").o
	rdma_objs+=("$o")
	stale "$o" "${o%.o}.d" || continue
	compile "$s" "$o" -DGGA_CONFIG_RDMA
done
wait
for o in "${objs[@]}" "${rdma_objs[@]}"; do
	[ -f "$o.log" ] || continue
	cat "$o.log" >>"$build_log"
	rm -f "$o.log"
	if [ -f "$o.failed" ]; then
		tail -30 "$build_log"
		not_ok "build $(cat "$o.failed") with $CC"
		rm -f "$o.failed"
		exit 1
	fi
done

for h in $harnesses; do
	extra=()
	if [ "$h" = fuzz_rdma_capsule ]; then
		extra=(-DGGA_CONFIG_RDMA "${rdma_objs[@]}")
	elif [ "$h" = fuzz_nvmf_cmd ]; then
		# The fake transport it shares with test/unit/target/nvmf/nvmf_ut.c.
		extra=("$root/test/common/nvmf_fake_transport.c")
	fi
	if ! "$CC" "${cflags[@]}" -fsanitize=fuzzer "$here/$h.c" "$here/fuzz_common.c" \
		"${extra[@]}" "${objs[@]}" "${libs[@]}" -o "$out/$h" >>"$build_log" 2>&1; then
		tail -30 "$build_log"
		not_ok "build $h with $CC"
		exit 1
	fi
done
ok "build $harnesses with $CC into $out"

tmp=$(mktemp -d /tmp/gga-fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# replay HARNESS WHAT DIR: run every file in DIR once; any failure fails the run.
replay() {
	local h=$1 what=$2 dir=$3 files n
	mapfile -t files < <(find "$dir" -maxdepth 1 -type f ! -name 'README*' 2>/dev/null | sort)
	n=${#files[@]}
	if [ "$n" -eq 0 ]; then
		ok "replay $h $what (no inputs)"
		return
	fi
	if timeout -k 5 300 "$out/$h" -rss_limit_mb=2048 -timeout=30 "${files[@]}" \
		>"$tmp/$h-$what.log" 2>&1; then
		ok "replay $h $what ($n inputs)"
	else
		tail -40 "$tmp/$h-$what.log"
		not_ok "replay $h $what ($n inputs; see the report above)"
	fi
}

for h in $harnesses; do
	mkdir -p "$here/regressions/$h"
	replay "$h" regressions "$here/regressions/$h"
	replay "$h" corpus "$here/corpus/$h"
done
if [ "$failed" -ne 0 ] || [ "$secs" -eq 0 ]; then
	exit $((failed != 0))
fi

# fuzz_one HARNESS: fuzz it for $secs from its seed corpus; the exit status
# goes to $tmp/HARNESS/rc.
fuzz_one() {
	local h=$1 work=$tmp/$1
	mkdir -p "$work/corpus" "$work/artifacts"
	cp "$here/corpus/$h"/* "$work/corpus/" 2>/dev/null
	timeout -k 10 $((secs + 120)) "$out/$h" -max_total_time="$secs" -rss_limit_mb=2048 \
		-timeout=30 -max_len=16384 -print_final_stats=1 \
		-artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1
	echo $? >"$work/rc"
}
running=0
for h in $harnesses; do
	if [ $running -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	fuzz_one "$h" &
	running=$((running + 1))
done
wait

total=0
for h in $harnesses; do
	work=$tmp/$h
	rc=$(cat "$work/rc" 2>/dev/null || echo 1)
	runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" |
		grep -o '[0-9]*$')
	total=$((total + ${runs:-0}))
	# The last status line: coverage (cov: edges, ft: features) at the end of the run.
	cov=$(grep -E '^#[0-9]+' "$work/log" | tail -1 | grep -o 'cov: [0-9]* ft: [0-9]*')
	mapfile -t found < <(find "$work/artifacts" -type f | sort)
	if [ "$rc" -eq 0 ] && [ "${#found[@]}" -eq 0 ]; then
		ok "fuzz $h for ${secs}s (${runs:-?} runs, $((${runs:-0} / secs))/s," \
			"${cov:-cov: ?})"
		continue
	fi
	grep -E -A30 '^==[0-9]+==|runtime error|^SUMMARY' "$work/log" | head -60
	for f in "${found[@]}"; do
		cp "$f" "$here/regressions/$h/" && echo "kept $here/regressions/$h/$(basename "$f")"
	done
	not_ok "fuzz $h for ${secs}s (exit $rc; ${#found[@]} inputs kept in" \
		"test/fuzz/regressions/$h/)"
done
n=$(echo $harnesses | wc -w)
if [ -z "$min_runs" ]; then
	echo "fuzz total: $total runs in $n harnesses x ${secs}s"
elif [ "$total" -ge "$min_runs" ]; then
	ok "fuzz total: $total runs in $n harnesses x ${secs}s (at least $min_runs)"
else
	not_ok "fuzz total: $total runs in $n harnesses x ${secs}s (fewer than $min_runs)"
fi
exit $((failed != 0))
