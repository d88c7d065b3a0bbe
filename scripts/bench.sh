#!/usr/bin/env bash
# `make bench`: the benchmarks recorded in docs/BENCHMARKS.md. Not tests:
# they print numbers. Runs side by side in one invocation so ratios are
# comparable on a shared, noisy machine.
#
#   scripts/bench.sh [-t SECONDS] [suite...]    suites: malloc codec gga nvmf vs_spdk rebuild stall failover auth tls (default: all)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
secs=10
suites=()
while [ $# -gt 0 ]; do
	case "$1" in
	-t)
		secs=$2
		shift
		;;
	-h | --help)
		sed -n '2,7p' "$0"
		exit 0
		;;
	*) suites+=("$1") ;;
	esac
	shift
done
[ ${#suites[@]} -gt 0 ] || suites=(malloc codec gga nvmf vs_spdk rebuild stall failover auth tls)

bash scripts/pkgdep.sh || exit 1
[ -f mk/config.mk ] || ./configure || exit 1
make -j2 build >/tmp/gga-bench-build.log 2>&1 || {
	tail -30 /tmp/gga-bench-build.log
	exit 1
}
bin=$root/build/bin
tmp=$(mktemp -d /tmp/gga-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
	"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)"

run() {
	echo
	echo "\$ $*"
	"$@"
}

for s in "${suites[@]}"; do
	case "$s" in
	malloc)
		cat >"$tmp/malloc.json" <<'JSON'
{"subsystems":[{"subsystem":"bdev","config":[
 {"method":"bdev_malloc_create","params":{"name":"Malloc0","num_blocks":262144,"block_size":4096}}]}]}
JSON
		echo
		echo "## bdevperf, malloc bdev, one core, 4 KiB, QD32"
		run "$bin/bdevperf" --json "$tmp/malloc.json" -m 0x1 -q 32 -o 4096 -w randread -t "$secs"
		run "$bin/bdevperf" --json "$tmp/malloc.json" -m 0x1 -q 32 -o 4096 -w randwrite -t "$secs"
		;;
	codec)
		if [ -x "$bin/gga_codec_bench" ]; then
			echo
			echo "## gga codec vs its parts, one core, 4 KiB blocks"
			for c in 50 random zeros; do
				run "$bin/gga_codec_bench" -b 4096 -c "$c" -t 1
			done
		else
			echo "codec: gga_codec_bench not built; skipped"
		fi
		;;
	gga)
		if [ -x "$root/scripts/bench_gga.sh" ]; then
			bash "$root/scripts/bench_gga.sh" -t "$secs"
		else
			echo "gga: scripts/bench_gga.sh not present yet; skipped"
		fi
		;;
	nvmf)
		bash "$root/scripts/bench_nvmf.sh" -t "$secs"
		;;
	vs_spdk)
		# gga's half only unless SPDK_DIR names an SPDK build (and hugepages are set up).
		bash "$root/scripts/bench_vs_spdk.sh" -t 5
		;;
	rebuild)
		bash "$root/scripts/bench_rebuild.sh" -t "$secs"
		;;
	stall)
		bash "$root/scripts/bench_stall.sh" -t "$((secs > 6 ? secs : 6))"
		;;
	failover)
		bash "$root/scripts/bench_failover.sh" -t "$((secs > 8 ? secs : 8))"
		;;
	auth)
		bash "$root/scripts/bench_auth.sh"
		;;
	tls)
		bash "$root/scripts/bench_tls.sh"
		;;
	*)
		echo "bench: unknown suite '$s'" >&2
		exit 2
		;;
	esac
done
