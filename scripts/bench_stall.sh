#!/usr/bin/env bash
# Read latency while a member stops answering (docs/BENCHMARKS.md, "A member
# that stalls"), over the three-target topology on loopback: a 4 KiB QD32
# randread run through the front, during which half-block target 1 (data_2)
# is frozen with SIGSTOP (its TCP connection stays open, nothing answers) and
# thawed with SIGCONT before the run ends. The gga bdev's watchdog fails the
# member after member_timeout_ms and resets its controller, so reads go on
# degraded; the goal is a p99.9 latency of at most twice member_timeout_ms.
# Side by side in one run: the same randread without a stall, then with a
# stall at each timeout given. Every command is printed. Called by
# `make bench` (scripts/bench.sh).
#
#   scripts/bench_stall.sh [-t SECONDS] [--timeouts "1000 5000"]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
secs=12
timeouts="1000 5000"
while [ $# -gt 0 ]; do
	case "$1" in
	-t)
		secs=$2
		shift
		;;
	--timeouts)
		timeouts=$2
		shift
		;;
	-h | --help)
		sed -n '2,13p' "$0"
		exit 0
		;;
	*)
		echo "bench_stall: unknown argument '$1'" >&2
		exit 2
		;;
	esac
	shift
done
[ "$secs" -ge 6 ] 2>/dev/null || {
	echo "bench_stall: -t must be at least 6 seconds" >&2
	exit 2
}
[ -x "$bin/bdevperf" ] && [ -x "$bin/gga_tgt" ] || {
	echo "bench_stall: $bin/bdevperf or gga_tgt is not built (run make)" >&2
	exit 1
}
topo=$(mktemp -d /tmp/gga-bench-stall.XXXXXX)
tmp=$(mktemp -d /tmp/gga-bench-stall-out.XXXXXX)
stopped=

cleanup() {
	[ -z "$stopped" ] || kill -CONT "$stopped" 2>/dev/null
	bash "$root/scripts/gga_topology.sh" down "$topo" >/dev/null 2>&1
	rm -rf "$tmp" "$topo"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

run() {
	echo "\$ $*"
	"$@"
}

frpc() {
	"$bin/gga_rpc" -s "$topo/front.sock" -t 30 "$@"
}

info() {
	frpc bdev_gga_get_info '{"name":"gga0"}' | python3 -c 'import json,sys
d = json.load(sys.stdin)[0]
print(eval(sys.argv[1]))' "$1"
}

# wait_online SECONDS: every member online again.
wait_online() {
	local i
	for i in $(seq 1 $(($1 * 10))); do
		[ "$(info 'd["state"]')" = online ] && [ "$(info 'd["recovery"] is None')" = True ] && return 0
		sleep 0.1
	done
	echo "bench_stall: the array is not online again within $1 s" >&2
	return 1
}

# bp NAME [STALL]: randread through the front; with STALL, target 1 frozen from
# second 2 to second secs-2. Prints one line of figures.
bp() {
	local name=$1 stall=${2:-} pid
	echo "\$ bdevperf --json $topo/bdevperf.json -m 0x2 -q 32 -o 4096 -w randread -t $secs --output json"
	timeout -k 5 $((secs + 120)) "$bin/bdevperf" --json "$topo/bdevperf.json" -m 0x2 -q 32 \
		-o 4096 -w randread -t "$secs" --output json >"$tmp/$name.json" 2>"$tmp/$name.err" &
	pid=$!
	if [ -n "$stall" ]; then
		sleep 2
		stopped=$(cat "$topo/hb1.pid")
		echo "\$ kill -STOP $stopped    # target 1 (data_2) stops answering"
		kill -STOP "$stopped"
		sleep $((secs - 4))
		echo "\$ kill -CONT $stopped"
		kill -CONT "$stopped"
		stopped=
	fi
	wait "$pid"
	python3 - "$tmp/$name.json" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))["total"]
except Exception as e:
    print("    no result (%s)" % e)
    sys.exit(0)
print("    IOPS %.0f, failed %d, latency us: p50 %.0f, p99 %.0f, p99.9 %.0f, max %.0f" % (
    t["iops"], t["io_failed"], t["p50_latency_us"], t["p99_latency_us"],
    t["p999_latency_us"], t["max_latency_us"]))
PY
}

echo
echo "## A member that stalls: 4 KiB QD32 randread, ${secs} s, target 1 frozen for $((secs - 4)) s"
run timeout -k 5 120 bash "$root/scripts/gga_topology.sh" up "$topo" --members malloc --size 256 |
	grep -v '^ *$' | sed 's/^/    /'
echo "### fill: sequential 128 KiB writes over the whole bdev"
timeout -k 5 300 "$bin/bdevperf" --json "$topo/bdevperf.json" -m 0x2 -q 32 -o 131072 -w write \
	-t 3 >"$tmp/fill.out" 2>&1
grep -E '^Total|run failed' "$tmp/fill.out" | sed 's/^/    /'
echo "### no stall"
bp base
for t in $timeouts; do
	echo "### target 1 frozen, member_timeout_ms $t (goal: p99.9 <= $((2 * t)) ms)"
	run "$bin/gga_rpc" -s "$topo/front.sock" bdev_gga_set_options \
		"{\"name\":\"gga0\",\"member_timeout_ms\":$t,\"rebuild_rate_mib_s\":0}" >/dev/null
	bp "stall$t" stall
	echo "    data_2 during the run: $(grep -c 'has not answered' "$topo/front.log") watchdog report(s) in the front's log so far"
	wait_online 120 || exit 1
	echo "    $(info '"data_2 back: last recovery %s of %s, %d blocks, result %s" % (d["last_recovery"]["kind"], ",".join(d["last_recovery"]["members"]), d["last_recovery"]["blocks"], d["last_recovery"]["result"]) if d["last_recovery"] else "no recovery"')"
done
