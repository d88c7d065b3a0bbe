#!/usr/bin/env bash
# Recovery speed of the gga bdev over the three-target topology on loopback
# (docs/BENCHMARKS.md, "Rebuild and resync"), side by side in one run:
#   seq   a sequential 128 KiB QD32 bdevperf write through the front (the pace
#         the members take writes at), which also fills the array;
#   full  target 1 killed and restarted: its malloc member comes back blank
#         and is rebuilt whole, unlimited rate, no front I/O;
#   load  the same under a 4 KiB QD32 randread run through the front, and the
#         randread IOPS during a rebuild at the default rate (100 MiB/s) beside
#         the same run without a rebuild;
#   member  a sequential 128 KiB QD32 write straight to target 1's namespace
#         (the pace one member takes writes at; the rebuilt member gets half
#         of the logical bytes, as it holds one of two data halves);
#   resync  file members on /dev/shm: target 1 killed, a one-second 128 KiB
#         randwrite run marks part of the regions, target 1 restarted on its
#         file: only those regions copied, unlimited rate, no front I/O.
# Speeds are logical MiB/s (blocks of the gga bdev recovered per second).
# Every command is printed. Called by `make bench` (scripts/bench.sh).
#
#   scripts/bench_rebuild.sh [-t SECONDS] [--size MiB]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
secs=5
size=1024
while [ $# -gt 0 ]; do
	case "$1" in
	-t)
		secs=$2
		shift
		;;
	--size)
		size=$2
		shift
		;;
	-h | --help)
		sed -n '2,18p' "$0"
		exit 0
		;;
	*)
		echo "bench_rebuild: unknown argument '$1'" >&2
		exit 2
		;;
	esac
	shift
done
[ -x "$bin/bdevperf" ] && [ -x "$bin/gga_tgt" ] || {
	echo "bench_rebuild: $bin/bdevperf or gga_tgt is not built (run make)" >&2
	exit 1
}
shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=/tmp
topo=$(mktemp -d "$shm/gga-bench-rebuild.XXXXXX")
tmp=$(mktemp -d /tmp/gga-bench-rebuild.XXXXXX)

cleanup() {
	bash "$root/scripts/gga_topology.sh" down "$topo" >/dev/null 2>&1
	rm -rf "$tmp" "$topo"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

run() {
	echo "\$ $*"
	"$@"
}

topo() {
	run timeout -k 5 120 bash "$root/scripts/gga_topology.sh" "$1" "$topo" "${@:2}" |
		grep -v '^ *$' | sed 's/^/    /'
}

frpc() {
	"$bin/gga_rpc" -s "$topo/front.sock" -t 30 "$@"
}

info() {
	frpc bdev_gga_get_info '{"name":"gga0"}' | python3 -c 'import json,sys
d = json.load(sys.stdin)[0]
print(eval(sys.argv[1]))' "$1"
}

# bp NAME ARGS...: bdevperf through the front, output in $tmp/NAME.out; prints the Total line.
bp() {
	local name=$1
	shift
	echo "\$ bdevperf --json $topo/bdevperf.json -m 0x2 $*"
	timeout -k 5 600 "$bin/bdevperf" --json "$topo/bdevperf.json" -m 0x2 "$@" \
		>"$tmp/$name.out" 2>&1
	grep -E '^Total|run failed' "$tmp/$name.out" | sed 's/^/    /'
}

total_field() {
	# bdevperf's Total row: IOPS is the 3rd field, MiB/s the 4th.
	awk -v f="$2" '/^Total/ {print $f}' "$tmp/$1.out"
}

# wait_recovered SECONDS: until the last recovery pass ended and every member is online.
wait_recovered() {
	local i
	for i in $(seq 1 $(($1 * 10))); do
		[ "$(info 'd["state"] == "online" and d["last_recovery"] is not None and d["recovery"] is None')" = True ] && return 0
		sleep 0.1
	done
	echo "bench_rebuild: recovery did not end within $1 s" >&2
	return 1
}

# kill_restart N: target N killed, then started again (malloc: blank; file: its file).
kill_restart() {
	topo kill-target "$1"
	sleep 1
	topo start-target "$1"
}

# The rebuild starts once the front's controller has reconnected and the probe ran (10 s at most).
wait_rebuilding() {
	local i
	for i in $(seq 1 100); do
		[ "$(info 'd["recovery"] is not None')" = True ] && return 0
		sleep 0.1
	done
	echo "bench_rebuild: no rebuild started within 10 s" >&2
}

recovery_line() {
	info '"%s of %s: %d blocks (%d regions) in %.2f s = %.0f MiB/s logical, result %s" % (d["last_recovery"]["kind"], ",".join(d["last_recovery"]["members"]), d["last_recovery"]["blocks"], d["last_recovery"]["regions"], d["last_recovery"]["seconds"], d["last_recovery"]["blocks"] * d["block_size"] / 1048576.0 / max(d["last_recovery"]["seconds"], 1e-9), d["last_recovery"]["result"])'
}

recovery_mib_s() {
	info '"%.0f" % (d["last_recovery"]["blocks"] * d["block_size"] / 1048576.0 / max(d["last_recovery"]["seconds"], 1e-9))'
}

echo
echo "## Rebuild and resync over the topology (malloc members, ${size} MiB gga bdev)"
topo up --members malloc --size "$size"
echo
echo "### seq: sequential 128 KiB QD32 write through the front (fills the array)"
bp seq -q 32 -o 131072 -w write -t "$secs"
seq_mib=$(total_field seq 4)

echo
echo "### full: target 1 comes back blank, rebuilt at an unlimited rate, no front I/O"
run "$bin/gga_rpc" -s "$topo/front.sock" bdev_gga_set_options '{"name":"gga0","rebuild_rate_mib_s":0}'
kill_restart 1
wait_recovered 600 || exit 1
echo "    $(recovery_line)"
full_mib=$(recovery_mib_s)

echo
echo "### randread 4 KiB QD32 through the front: alone, then during a rebuild at the default rate"
bp rr_alone -q 32 -o 4096 -w randread -t "$secs"
run "$bin/gga_rpc" -s "$topo/front.sock" bdev_gga_set_options '{"name":"gga0","rebuild_rate_mib_s":100}'
kill_restart 1
wait_rebuilding
bp rr_rebuild -q 32 -o 4096 -w randread -t "$secs"
echo "    during the run: $(info '"rebuilding" if d["recovery"] is not None else "rebuild ended before the run did"')"
wait_recovered 600 || exit 1
echo "    $(recovery_line)"
rr_alone=$(total_field rr_alone 3)
rr_rebuild=$(total_field rr_rebuild 3)

echo
echo "### load: rebuild at an unlimited rate under the same randread run"
run "$bin/gga_rpc" -s "$topo/front.sock" bdev_gga_set_options '{"name":"gga0","rebuild_rate_mib_s":0}'
kill_restart 1
wait_rebuilding
bp rr_unlimited -q 32 -o 4096 -w randread -t "$secs"
wait_recovered 600 || exit 1
echo "    $(recovery_line)"
load_mib=$(recovery_mib_s)
rr_unlimited=$(total_field rr_unlimited 3)

echo
echo "### member: sequential 128 KiB QD32 write straight to target 1's namespace (member bytes)"
# Last, as it overwrites the member under the array. hb1 listens on the front's port + 2.
python3 - "$topo/bdevperf.json" >"$tmp/member.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
p = cfg["subsystems"][0]["config"][0]["params"]
p.update(name="m1", trsvcid=str(int(p["trsvcid"]) + 2), subnqn="nqn.2016-06.io.gga:hb1")
print(json.dumps(cfg))
PY
echo "\$ bdevperf --json $tmp/member.json -b m1n1 -m 0x2 -q 32 -o 131072 -w write -t $secs"
timeout -k 5 600 "$bin/bdevperf" --json "$tmp/member.json" -b m1n1 -m 0x2 -q 32 -o 131072 \
	-w write -t "$secs" >"$tmp/member.out" 2>&1
grep -E '^Total|run failed' "$tmp/member.out" | sed 's/^/    /'
member_mib=$(total_field member 4)
topo down

echo
echo "### resync: file members on $shm, target 1 away during a 1 s randwrite run"
topo up --members file --size "$size"
run "$bin/gga_rpc" -s "$topo/front.sock" bdev_gga_set_options '{"name":"gga0","rebuild_rate_mib_s":0}'
bp fill -q 32 -o 131072 -w write -t "$secs"
# Lazy clearing: wait until no region is marked, so the count below is the outage's.
for i in $(seq 1 100); do
	[ "$(info 'd["bitmap"]["dirty"]')" = 0 ] && break
	sleep 0.1
done
topo kill-target 1
# 128 KiB writes at random offsets touch most regions; a short run marks a share of them.
bp degraded -q 8 -o 131072 -w randwrite -t 1
echo "    marked regions: $(info 'd["bitmap"]["dirty"]') of $(info 'd["bitmap"]["regions"]')"
topo start-target 1
wait_recovered 600 || exit 1
echo "    $(recovery_line)"
resync_mib=$(recovery_mib_s)
topo down

echo
echo "## Summary (logical MiB/s; ratios against the sequential write through the front)"
python3 - "$seq_mib" "$full_mib" "$load_mib" "$resync_mib" "$rr_alone" "$rr_rebuild" "$rr_unlimited" \
	"$member_mib" <<'PY'
import sys
seq, full, load, resync, alone, during, unlimited, member = (float(x or 0) for x in sys.argv[1:])
r = lambda a, b: (a / b) if b else 0.0
print(f"| sequential 128 KiB write, front | {seq:.0f} MiB/s | 1.00 |")
print(f"| sequential 128 KiB write, one member namespace | {member:.0f} MiB/s | {r(member, seq):.2f} |")
print(f"| full rebuild, no front I/O, unlimited | {full:.0f} MiB/s | {r(full, seq):.2f} of the front write (goal >= 0.50); "
      f"{r(full, member):.2f} of the member write; the rebuilt member took {full / 2:.0f} MiB/s |")
print(f"| full rebuild under randread, unlimited | {load:.0f} MiB/s | {r(load, seq):.2f} |")
print(f"| resync of marked regions, no front I/O | {resync:.0f} MiB/s | {r(resync, seq):.2f} |")
print(f"| randread 4 KiB QD32, no rebuild | {alone:.0f} IOPS | 1.00 |")
print(f"| randread during a rebuild at 100 MiB/s | {during:.0f} IOPS | {r(during, alone):.2f} (goal >= 0.70) |")
print(f"| randread during an unlimited rebuild | {unlimited:.0f} IOPS | {r(unlimited, alone):.2f} |")
PY
