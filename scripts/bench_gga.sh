#!/usr/bin/env bash
# The gga bdev beside a plain malloc bdev: bdevperf, one core, 4 KiB I/O,
# QD32, randread and randwrite. The gga bdev sits on three malloc members of
# 2 KiB + 64 bytes of metadata; the plain bdev is a malloc bdev of 4 KiB
# blocks and the same logical size. Both are in the same configuration and
# are measured one after the other, alternating, REPS times each (the
# machine is shared and noisy); each table shows the median run of each,
# every run, and the gga/plain ratio of the medians (also run by run, and of
# the best runs, which a busy machine disturbs least). Called by `make bench`
# (scripts/bench.sh).
#
#   scripts/bench_gga.sh [-t SECONDS] [-r REPS] [-q DEPTH]
#
# Why not both bdevs in one bdevperf process: on one core, the two jobs'
# completions are reaped in the same reactor iterations, so both jobs run in
# lockstep and report the same IOPS whatever each I/O costs. Separate runs
# on the same configuration, alternated, measure each bdev alone.
#
# Every run uses bdevperf --prefill: before the timed run the job writes its
# whole bdev once with random (incompressible) data, so randread reads real
# data on both bdevs (not the kernel's zero page on malloc, nor the gga
# codec's never-written path) and randwrite overwrites written blocks.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
secs=10
reps=3
qd=32
while [ $# -gt 0 ]; do
	case "$1" in
	-t)
		secs=$2
		shift
		;;
	-r)
		reps=$2
		shift
		;;
	-q)
		qd=$2
		shift
		;;
	-h | --help)
		sed -n '2,22p' "$0"
		exit 0
		;;
	*)
		echo "bench_gga: unknown argument '$1'" >&2
		exit 2
		;;
	esac
	shift
done
[ -x "$bin/bdevperf" ] || {
	echo "bench_gga: $bin/bdevperf is not built (run make)" >&2
	exit 1
}
tmp=$(mktemp -d /tmp/gga-bench-gga.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

blocks=65536
cat >"$tmp/bench.json" <<JSON
{"subsystems":[{"subsystem":"bdev","config":[
 {"method":"bdev_malloc_create","params":{"name":"Malloc0","num_blocks":$blocks,"block_size":4096}},
 {"method":"bdev_malloc_create","params":{"name":"M1","num_blocks":$((blocks + 32)),"block_size":2048,"md_size":64}},
 {"method":"bdev_malloc_create","params":{"name":"M2","num_blocks":$((blocks + 32)),"block_size":2048,"md_size":64}},
 {"method":"bdev_malloc_create","params":{"name":"M3","num_blocks":$((blocks + 32)),"block_size":2048,"md_size":64}},
 {"method":"bdev_gga_create","params":{"name":"gga0","data_1":"M1","data_2":"M2","parity":"M3"}}]}]}
JSON

# The command of one run, with CONFIG standing for the configuration above.
cmd() {
	echo "bdevperf --json CONFIG -m 0x1 -q $qd -o 4096 -w $1 -t $secs -b $2 --prefill --output json"
}

# run WORKLOAD BDEV REP: one bdevperf run, JSON result in $tmp/WORKLOAD-BDEV-REP.json.
run() {
	local out="$tmp/$1-$2-$3.json"
	if ! timeout -k 5 $((secs + 120)) "$bin/bdevperf" --json "$tmp/bench.json" -m 0x1 -q "$qd" \
		-o 4096 -w "$1" -t "$secs" -b "$2" --prefill --output json >"$out" 2>"$tmp/err.log"; then
		echo "bench_gga: bdevperf $1 on $2 failed:" >&2
		tail -5 "$tmp/err.log" >&2
		return 1
	fi
}

model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)
echo
echo "## gga bdev vs plain malloc: bdevperf, one core, 4 KiB, QD$qd, ${secs}s x $reps runs each (median)"
echo
echo "machine: $(nproc) cores online, ${model:-unknown CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "config (CONFIG):"
sed 's/^/    /' "$tmp/bench.json"
echo "commands, alternating Malloc0 and gga0, $reps times per workload:"
for w in randread randwrite; do
	for b in Malloc0 gga0; do
		echo "    $(cmd "$w" "$b")"
	done
done
for w in randread randwrite; do
	for r in $(seq 1 "$reps"); do
		run "$w" Malloc0 "$r" || exit 1
		run "$w" gga0 "$r" || exit 1
	done
	python3 - "$tmp" "$w" "$reps" <<'PY'
import json, statistics, sys
tmp, w, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = {}
for bdev in ("Malloc0", "gga0"):
    runs = [json.load(open(f"{tmp}/{w}-{bdev}-{r}.json"))["total"] for r in range(1, reps + 1)]
    all_iops = [t["iops"] for t in runs]
    runs.sort(key=lambda t: t["iops"])
    rows[bdev] = (runs[len(runs) // 2], all_iops)
print()
print(f"{w:<10} {'bdev':<10} {'IOPS':>12} {'MiB/s':>10} {'avg us':>9} {'p50 us':>9} {'p99 us':>9} {'p99.9 us':>9}   all runs (IOPS, in order)")
for bdev, (t, all_iops) in rows.items():
    spread = 100 * (max(all_iops) - min(all_iops)) / t["iops"]
    print(f"{'':<10} {bdev:<10} {t['iops']:>12.0f} {t['mibps']:>10.1f} {t['avg_latency_us']:>9.2f} "
          f"{t['p50_latency_us']:>9.2f} {t['p99_latency_us']:>9.2f} {t['p999_latency_us']:>9.2f}   "
          + " ".join(f"{v:.0f}" for v in all_iops) + f"  (spread {spread:.0f}%)")
ratio = rows["gga0"][0]["iops"] / rows["Malloc0"][0]["iops"]
pairs = [g / m for g, m in zip(rows["gga0"][1], rows["Malloc0"][1])]
best = max(rows["gga0"][1]) / max(rows["Malloc0"][1])
print(f"{'':<10} gga/plain  {100 * ratio:>11.1f}%   (of medians; run by run: "
      + " ".join(f"{100 * p:.1f}%" for p in pairs) + f"; of the best runs: {100 * best:.1f}%)")
PY
done
