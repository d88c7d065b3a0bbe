#!/usr/bin/env bash
# SPDK's spdk_nvme_identify against gga_tgt (issue 21): every admin command
# and log page it issues must succeed. Not part of `make test` (CI has no
# SPDK build): run it by hand with an SPDK built as docs/TESTING.md says ("Building the SPDK peer").
#
#   test/spdk/spdk_identify.sh [--spdk DIR] [BUILD]     (or SPDK_DIR=DIR)
#
# Exits 77 saying why when no SPDK build is given. Starts one gga_tgt with a
# malloc namespace on 127.0.0.1, runs spdk_nvme_identify (--no-huge, 512 MiB:
# no hugepages needed), and checks: exit 0, no "failed" line, and the pages
# and features it prints (Firmware Slot, Commands Supported and Effects,
# Arbitration, Power Management, Temperature Threshold, Error Recovery, the
# SMART / Health page with its spare threshold).
set -u
spdk=${SPDK_DIR:-}
build=build
while [ $# -gt 0 ]; do
	case "$1" in
	--spdk) spdk=$2 && shift ;;
	*) build=$1 ;;
	esac
	shift
done
ident=$spdk/build/bin/spdk_nvme_identify
if [ -z "$spdk" ] || [ ! -x "$ident" ]; then
	echo "skip: no SPDK build (--spdk DIR or SPDK_DIR with build/bin/spdk_nvme_identify)"
	exit 77
fi
bin=$build/bin
tmp=$(mktemp -d /tmp/gga-spdk-identify.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
check() {
	local desc=$1
	shift
	if "$@"; then echo "ok - $desc"; else echo "not ok - $desc"; fails=$((fails + 1)); fi
}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
nqn=nqn.2016-06.io.gga:identify
"$bin/gga_tgt" -m 0x1 -r "$tmp/t.sock" >"$tmp/t.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q ': ready' "$tmp/t.log" && break; sleep 0.1; done
rpc() { "$bin/gga_rpc" -s "$tmp/t.sock" "$@" >/dev/null; }
check "gga_tgt with a malloc namespace on 127.0.0.1:$port" eval "
	rpc bdev_malloc_create '{\"name\":\"M0\",\"num_blocks\":16384,\"block_size\":512}' &&
	rpc nvmf_create_transport '{\"trtype\":\"TCP\"}' &&
	rpc nvmf_create_subsystem '{\"nqn\":\"$nqn\",\"allow_any_host\":true}' &&
	rpc nvmf_subsystem_add_ns '{\"nqn\":\"$nqn\",\"namespace\":{\"bdev_name\":\"M0\"}}' &&
	rpc nvmf_subsystem_add_listener '{\"nqn\":\"$nqn\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$port\"}}'"
timeout -k 5 60 "$ident" -r "trtype:tcp adrfam:IPv4 traddr:127.0.0.1 trsvcid:$port subnqn:$nqn" \
	--no-huge -s 512 >"$tmp/identify.out" 2>&1
rc=$?
check "spdk_nvme_identify exits 0 (exit $rc)" test $rc -eq 0
grep -iE "failed|\*ERROR\*" "$tmp/identify.out" | head -10 | sed 's/^/  | /'
check "no failed command and no error in its output" \
	bash -c "! grep -qiE 'failed|\\*ERROR\\*' '$tmp/identify.out'"
for what in "Firmware Slot Information" "Commands Supported and Effects" "Arbitration Burst:" \
	"Current Power State:" "Temperature Threshold:" "Error Recovery Timeout:" \
	"Keep Alive Granularity:" "Health Information" "Available Spare Threshold:"; do
	check "it prints '$what'" grep -q "$what" "$tmp/identify.out"
done
grep -E "Temperature Threshold:|Arbitration Burst:|Current Power State:|Available Spare" "$tmp/identify.out" |
	sed 's/^/  | /'
echo "spdk_identify: $fails failed"
[ "$fails" -eq 0 ]
