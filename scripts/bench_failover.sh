#!/usr/bin/env bash
# Front failover time and the I/O stall a host sees (docs/BENCHMARKS.md,
# "Front failover"): the topology with two fronts (scripts/gga_topology.sh
# --fronts 2, malloc members, 16 MiB), gga's bdevperf as a multipath host of
# both (4 KiB verify, QD8), the active front SIGKILLed a few seconds into the
# run. Per run: when the standby serves (polled over RPC, so rounded up to
# ~0.1 s), the longest I/O bdevperf saw (the stall), failed I/Os and verify
# mismatches. Side by side in one invocation, for each lease given, RUNS runs
# each. Every command is printed. Called by `make bench` (scripts/bench.sh).
#
#   scripts/bench_failover.sh [-t SECONDS] [--leases "1000 2000"] [--runs N]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
secs=10
leases="1000 2000"
runs=3
while [ $# -gt 0 ]; do
	case "$1" in
	-t)
		secs=$2
		shift
		;;
	--leases)
		leases=$2
		shift
		;;
	--runs)
		runs=$2
		shift
		;;
	-h | --help)
		sed -n '2,11p' "$0"
		exit 0
		;;
	*)
		echo "bench_failover: unknown argument '$1'" >&2
		exit 2
		;;
	esac
	shift
done
[ "$secs" -ge 8 ] 2>/dev/null || {
	echo "bench_failover: -t must be at least 8 (the kill comes at second 3)" >&2
	exit 2
}
tmp=$(mktemp -d /tmp/gga-bench-failover.XXXXXX)
topo=$tmp/topo
cleanup() {
	bash "$root/scripts/gga_topology.sh" down "$topo" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

serving() {
	"$bin/gga_rpc" -s "$topo/front2.sock" -t 5 bdev_gga_get_info '{"name":"gga0"}' 2>/dev/null |
		grep -q '"serving": true'
}

echo
echo "## Front failover: gga's bdevperf (multipath) over two fronts, the active one SIGKILLed"
echo "| lease ms | run | standby serving after (ms) | longest I/O (ms) | failed I/Os | mismatches |"
echo "|---|---|---|---|---|---|"
for lease in $leases; do
	for run in $(seq 1 "$runs"); do
		rm -rf "$topo"
		if ! bash "$root/scripts/gga_topology.sh" up "$topo" --fronts 2 --members malloc \
			--size 16 --lease-ms "$lease" >"$tmp/up.out" 2>&1; then
			cat "$tmp/up.out"
			exit 1
		fi
		"$bin/bdevperf" --json "$topo/bdevperf.json" -m 0x2 -q 8 -o 4096 -w verify -t "$secs" \
			>"$tmp/bp.out" 2>&1 &
		bp=$!
		sleep 3
		t0=$(date +%s%N)
		bash "$root/scripts/gga_topology.sh" kill-target "$topo" front >/dev/null 2>&1
		took=timeout
		for _ in $(seq 1 300); do
			if serving; then
				took=$((($(date +%s%N) - t0) / 1000000))
				break
			fi
			sleep 0.05
		done
		wait $bp
		stall=$(awk '$1 == "ggan1" && $2 == ":" {printf "%.0f", $10 / 1000}' "$tmp/bp.out")
		fails=$(awk '$1 == "ggan1" && $2 == ":" {print ($6 > 0 ? "yes" : "0")}' "$tmp/bp.out")
		mism=$(sed -n 's/.*verify: [0-9]* blocks compared, \([0-9]*\) mismatches.*/\1/p' "$tmp/bp.out")
		grep -q 'run failed' "$tmp/bp.out" && fails="run failed"
		echo "| $lease | $run | $took | ${stall:-?} | ${fails:-?} | ${mism:-?} |"
		bash "$root/scripts/gga_topology.sh" down "$topo" >/dev/null 2>&1
	done
done
echo
echo "commands: scripts/gga_topology.sh up DIR --fronts 2 --members malloc --size 16 --lease-ms L;"
echo "  $bin/bdevperf --json DIR/bdevperf.json -m 0x2 -q 8 -o 4096 -w verify -t $secs;"
echo "  after 3 s: scripts/gga_topology.sh kill-target DIR front"
