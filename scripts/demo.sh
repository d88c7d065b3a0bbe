#!/usr/bin/env bash
# `make demo`: install what is missing, configure and build if needed, start
# gga_tgt with the embedded default configuration, drive it over JSON-RPC,
# run bdevperf on the configuration the daemon reports, print the results
# table, and shut everything down.
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
		sed -n '2,10p' "$0"
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
tgt_pid=
cleanup() {
	if [ -n "$tgt_pid" ] && kill -0 "$tgt_pid" 2>/dev/null; then
		kill -TERM "$tgt_pid"
		wait "$tgt_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The embedded default configuration: a 256 MiB RAM disk with 4 KiB blocks.
cat >"$tmp/gga.json" <<'JSON'
{
  "subsystems": [
    {
      "subsystem": "bdev",
      "config": [
        { "method": "bdev_malloc_create",
          "params": { "name": "Malloc0", "num_blocks": 65536, "block_size": 4096 } }
      ]
    }
  ]
}
JSON

sock=$tmp/gga.sock
"$bin/gga_tgt" -m 0x1 -r "$sock" --json "$tmp/gga.json" >"$tmp/tgt.log" 2>&1 &
tgt_pid=$!
for i in $(seq 1 100); do
	grep -q ': ready' "$tmp/tgt.log" && break
	kill -0 $tgt_pid 2>/dev/null || break
	sleep 0.1
done
if ! grep -q ': ready' "$tmp/tgt.log"; then
	cat "$tmp/tgt.log"
	echo "demo: gga_tgt did not start" >&2
	exit 1
fi
echo "== gga_tgt is up (pid $tgt_pid, RPC on $sock)"
echo "== gga_rpc bdev_get_bdevs"
"$bin/gga_rpc" -s "$sock" bdev_get_bdevs | python3 -c 'import json, sys
for b in json.load(sys.stdin):
    print("   %-10s %-14s %6d-byte blocks x %-9d md %d" % (b["name"], b["product_name"],
          b["block_size"], b["num_blocks"], b["md_size"]))'
"$bin/gga_rpc" -s "$sock" save_config >"$tmp/saved.json" || exit 1

echo
echo "== bdevperf: 4 KiB random 70/30 read/write, QD32, ${secs} s, verify first"
"$bin/bdevperf" --log-level warn --json "$tmp/saved.json" -m 0x2 -q 32 -o 4096 -w verify -t 1 >"$tmp/verify.out" 2>&1
vrc=$?
grep -E 'verify:' "$tmp/verify.out" || cat "$tmp/verify.out"
"$bin/bdevperf" --log-level warn --json "$tmp/saved.json" -m 0x2 -q 32 -o 4096 -w randrw -M 70 -t "$secs"
rc=$?

kill -INT $tgt_pid
wait $tgt_pid
trc=$?
tgt_pid=
echo "== gga_tgt shut down (exit $trc)"
[ $rc -eq 0 ] && [ $vrc -eq 0 ] && [ $trc -eq 0 ]
