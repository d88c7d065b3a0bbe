#!/usr/bin/env bash
# `make demo`: install what is missing, configure and build if needed, bring
# up the three-target topology (scripts/gga_topology.sh: three half-block
# targets and a front gga_tgt exporting the gga bdev, all NVMe/TCP on
# 127.0.0.1), run bdevperf against the front over NVMe/TCP (a short verify
# pass, then 4 KiB random 70/30 read/write at QD32), print the results table,
# and bring the topology down.
#
#   scripts/demo.sh [-t SECONDS] [--no-build]
#
# Environment: GGA_BUILD (default build/) selects the build tree.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

secs=5
build=1
while [ $# -gt 0 ]; do
	case "$1" in
	-t)
		secs=$2
		shift
		;;
	--no-build) build=0 ;;
	-h | --help)
		sed -n '2,12p' "$0"
		exit 0
		;;
	*)
		echo "demo: unknown option '$1'" >&2
		exit 2
		;;
	esac
	shift
done

out=${GGA_BUILD:-$root/build}
if [ $build -eq 1 ]; then
	bash scripts/pkgdep.sh || exit 1
	[ -f mk/config.mk ] || ./configure || exit 1
	make -j2 O="$out" build >/tmp/gga-demo-build.log 2>&1 || {
		tail -30 /tmp/gga-demo-build.log
		echo "demo: build failed (full log: /tmp/gga-demo-build.log)" >&2
		exit 1
	}
fi
bin=$out/bin

tmp=$(mktemp -d /tmp/gga-demo.XXXXXX)
topo() {
	GGA_BUILD=$out bash "$root/scripts/gga_topology.sh" "$@"
}
up=0
cleanup() {
	if [ $up -eq 1 ]; then
		topo down "$tmp/topo" >/dev/null 2>&1
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== bringing up the topology: three half-block targets and the front (gga_tgt x4)"
up=1
topo up "$tmp/topo" --size 64 >"$tmp/up.out" 2>&1
urc=$?
sed 's/^/   /' "$tmp/up.out"
if [ $urc -ne 0 ]; then
	echo "demo: the topology did not come up" >&2
	exit 1
fi
front=$tmp/topo/front.sock
echo "== gga_rpc bdev_gga_get_info (on the front)"
"$bin/gga_rpc" -s "$front" bdev_gga_get_info '{"name":"gga0"}' | python3 -c 'import json, sys
g = json.load(sys.stdin)[0]
print("   %s: %s, %d x %d-byte blocks, %d+%d %s; members: %s" % (g["name"], g["state"],
      g["num_blocks"], g["block_size"], g["k"], g["m"], g["matrix_type"],
      ", ".join("%s=%s (%s)" % (m["role"], m["name"], m["state"]) for m in g["members"])))'

# bdevperf attaches to the front as an NVMe/TCP host (bdev ggan1).
bp() {
	"$bin/bdevperf" --log-level warn --json "$tmp/topo/bdevperf.json" -m 0x2 -q 32 -o 4096 "$@"
}
echo
echo "== bdevperf over NVMe/TCP through the front: verify 2 s, then 4 KiB random 70/30 read/write, QD32, ${secs} s"
bp -w verify -t 2 >"$tmp/verify.out" 2>&1
vrc=$?
grep -E 'verify:' "$tmp/verify.out" || cat "$tmp/verify.out"
[ $vrc -eq 0 ] || grep -E 'run failed|ERROR|error' "$tmp/verify.out" | tail -5
bp -w randrw -M 70 -t "$secs"
rc=$?

echo "== bringing the topology down"
topo down "$tmp/topo" >"$tmp/down.out" 2>&1
sed 's/^/   /' "$tmp/down.out"
up=0
n=$(grep -c 'exit 0)$' "$tmp/down.out")
trc=0
[ "$n" -eq 4 ] || trc=1
echo "== gga_tgt shut down (exit $trc): $n of 4 daemons exited 0"
[ $rc -eq 0 ] && [ $vrc -eq 0 ] && [ $trc -eq 0 ]
