#!/usr/bin/env bash
# NVMe/TCP on loopback, the figures of issue 4 (docs/BENCHMARKS.md):
#   (a) a plain malloc namespace exported by one gga_tgt (core 0);
#   (b) the three-target topology (scripts/gga_topology.sh: three half-block
#       targets and the front, all on core 0); its half-block targets export
#       malloc bdevs (--members malloc, the default here, as in SPDK's raid5f
#       over NVMe/TCP namespaces) or files on tmpfs (--members file; /dev/shm,
#       so that the disk under /tmp does not set the pace);
# bdevperf attaches remotely from core 1 and runs 4 KiB QD32 randread and
# randwrite and 128 KiB QD32 randwrite against each, REPS times each,
# alternating (a) and (b) run by run; the table gives the median run and the
# (b)/(a) ratio of the medians. Randread runs with --prefill, so it reads
# written, incompressible data. Called by `make bench` (scripts/bench.sh).
#
#   scripts/bench_nvmf.sh [-t SECONDS] [-r REPS] [--members malloc|file]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
secs=10
reps=3
members=malloc
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
	--members)
		members=$2
		shift
		;;
	-h | --help)
		sed -n '2,16p' "$0"
		exit 0
		;;
	*)
		echo "bench_nvmf: unknown argument '$1'" >&2
		exit 2
		;;
	esac
	shift
done
[ -x "$bin/bdevperf" ] && [ -x "$bin/gga_tgt" ] || {
	echo "bench_nvmf: $bin/bdevperf or gga_tgt is not built (run make)" >&2
	exit 1
}
shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=/tmp
tmp=$(mktemp -d /tmp/gga-bench-nvmf.XXXXXX)
topo=$(mktemp -d "$shm/gga-bench-topo.XXXXXX")
tgt_pid=

cleanup() {
	[ -n "$tgt_pid" ] && kill -TERM "$tgt_pid" 2>/dev/null && wait "$tgt_pid" 2>/dev/null
	bash "$root/scripts/gga_topology.sh" down "$topo" >/dev/null 2>&1
	rm -rf "$tmp" "$topo"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# (a): one gga_tgt exporting a malloc bdev of the gga bdev's logical size.
port=$(free_port)
nqn=nqn.2016-06.io.gga:bench-malloc
cat >"$tmp/tgt.json" <<JSON
{"subsystems":[
 {"subsystem":"bdev","config":[
  {"method":"bdev_malloc_create","params":{"name":"M0","num_blocks":16384,"block_size":4096}}]},
 {"subsystem":"nvmf","config":[
  {"method":"nvmf_create_transport","params":{"trtype":"TCP"}},
  {"method":"nvmf_create_subsystem","params":{"nqn":"$nqn","allow_any_host":true}},
  {"method":"nvmf_subsystem_add_ns","params":{"nqn":"$nqn","namespace":{"bdev_name":"M0"}}},
  {"method":"nvmf_subsystem_add_listener","params":{"nqn":"$nqn","listen_address":
   {"trtype":"TCP","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"$port"}}}]}]}
JSON
cat >"$tmp/bp_malloc.json" <<JSON
{"subsystems":[{"subsystem":"bdev","config":[{"method":"bdev_nvme_attach_controller","params":
 {"name":"m","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"$port","subnqn":"$nqn"}}]}]}
JSON
"$bin/gga_tgt" -m 0x1 --mem-size 128m -r "$tmp/tgt.sock" --json "$tmp/tgt.json" \
	>"$tmp/tgt.log" 2>&1 &
tgt_pid=$!
for _ in $(seq 1 100); do
	grep -q ': ready' "$tmp/tgt.log" && break
	sleep 0.1
done
grep -q ': ready' "$tmp/tgt.log" || {
	cat "$tmp/tgt.log"
	echo "bench_nvmf: the malloc target did not start" >&2
	exit 1
}

# (b): the topology, 64 MiB gga bdev (the size (a) has too).
bash "$root/scripts/gga_topology.sh" up "$topo" --size 64 --cores 0x1 --members "$members" \
	>"$tmp/topo.log" 2>&1 || {
	cat "$tmp/topo.log"
	echo "bench_nvmf: the topology did not come up" >&2
	exit 1
}

# one CONFIG BDEV IOSIZE WORKLOAD EXTRA...: IOPS and MiB/s of one run.
one() {
	local cfg=$1 bdev=$2 size=$3 w=$4 out
	shift 4
	out=$("$bin/bdevperf" --json "$cfg" -b "$bdev" -m 0x2 -q 32 -o "$size" -w "$w" \
		-t "$secs" --output json "$@" 2>/dev/null)
	python3 -c 'import json,sys
d=json.loads(sys.argv[1]); t=d.get("total") or d["jobs"][0]
print("%.0f %.1f %.0f" % (t["iops"], t["mibps"], t.get("max_latency_us", 0)))' "$out" 2>/dev/null ||
		echo "0 0 0"
}

median() {
	sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

echo
echo "## NVMe/TCP loopback: (a) malloc namespace, (b) gga topology ($members members);" \
	"bdevperf on core 1, QD32, $secs s x $reps runs, alternating"
for t in "4096 randread --prefill" "4096 randwrite" "131072 randwrite"; do
	set -- $t
	size=$1 w=$2 extra=${3:-}
	: >"$tmp/a" && : >"$tmp/b"
	for r in $(seq 1 "$reps"); do
		one "$tmp/bp_malloc.json" mn1 "$size" "$w" $extra >>"$tmp/a"
		one "$topo/bdevperf.json" ggan1 "$size" "$w" $extra >>"$tmp/b"
	done
	ai=$(cut -d' ' -f1 "$tmp/a" | median)
	am=$(cut -d' ' -f2 "$tmp/a" | median)
	bi=$(cut -d' ' -f1 "$tmp/b" | median)
	bm=$(cut -d' ' -f2 "$tmp/b" | median)
	printf '%-7s %-9s  (a) %8.0f IOPS %8.1f MiB/s   (b) %8.0f IOPS %8.1f MiB/s   b/a %3.0f%%\n' \
		"$size" "$w" "$ai" "$am" "$bi" "$bm" \
		"$(awk -v a="$ai" -v b="$bi" 'BEGIN {print (a > 0) ? 100 * b / a : 0}')"
	echo "        runs (a) IOPS MiB/s max_us: $(tr '\n' ';' <"$tmp/a")"
	echo "        runs (b) IOPS MiB/s max_us: $(tr '\n' ';' <"$tmp/b")"
done
