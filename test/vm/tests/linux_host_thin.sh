#!/usr/bin/env bash
# A thin namespace and the Linux kernel host (inside the test VM; docs/DESIGN.md
# "Thin namespaces"): gga_tgt exports a thin malloc bdev (8192 blocks of 512
# bytes, thin_blocks 4096). nvme-cli's id-ns shows NSFEAT bit 0 and NUSE
# moving; a write past the limit fails in dd with ENOSPC ("No space left on
# device"), not EIO; blkdiscard makes NUSE fall, the discarded range reads
# zeros, and the write that failed succeeds.
source "$(dirname "$0")/../../integration/common.sh"
source "$(dirname "$0")/../guest_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/run_tests.sh)"
command -v nvme >/dev/null || skip "nvme-cli is not installed"
command -v blkdiscard >/dev/null || skip "blkdiscard is not installed"

HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
HOSTID=$(cat /proc/sys/kernel/random/uuid)
NQN=nqn.2016-06.io.gga:vmthin
CONNECTED=0

vm_cleanup() {
	[ $CONNECTED -eq 0 ] || timeout 60 nvme disconnect -n $NQN >/dev/null 2>&1
	cleanup
}
trap vm_cleanup EXIT

vm_modprobe nvme-tcp || skip "the nvme-tcp module does not load"

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_tgt t0 --mem-size 64m || {
	not_ok "gga_tgt starts"
	finish
}
T0=$TGT_PID
rpc t0 bdev_malloc_create '{"name":"T0","num_blocks":8192,"block_size":512,"thin_blocks":4096}' \
	>/dev/null &&
	rpc t0 nvmf_create_transport --trtype tcp >/dev/null &&
	rpc t0 nvmf_create_subsystem --nqn $NQN --allow_any_host true >/dev/null &&
	rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"T0\"}}" \
		>/dev/null &&
	rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": {\"trtype\": \"TCP\", \
\"adrfam\": \"IPv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"$PORT\"}}" >/dev/null
check "a thin malloc namespace (4 MiB, 2 MiB allocatable) on 127.0.0.1:$PORT" test $? -eq 0

timeout 60 nvme connect -t tcp -a 127.0.0.1 -s "$PORT" -n $NQN --hostnqn "$HOSTNQN" \
	--hostid "$HOSTID" --ctrl-loss-tmo 5 >"$TMP/conn.log" 2>&1 && CONNECTED=1 ||
	{ cat "$TMP/conn.log"; dmesg | tail -15; }
check "nvme connect" test $CONNECTED -eq 1
DEV=$(vm_nvme_wait_ns $NQN 30) || DEV=
check "the namespace is a block device ($DEV)" test -n "$DEV"
[ -n "$DEV" ] || finish

# idns EXPR: a python expression on d, nvme id-ns's JSON of $DEV.
idns() {
	timeout 30 nvme id-ns "$DEV" -o json >"$TMP/idns.json" 2>&1 && jget "$TMP/idns.json" "$1"
}
v=$(idns '[d["nsfeat"] & 1, d["nsze"], d["ncap"], d["nuse"], d["dlfeat"]]')
check "id-ns: NSFEAT bit 0 (thin), NSZE 8192, NCAP 4096, NUSE 0, DLFEAT 9 (got $v)" \
	test "$v" = "[1, 8192, 4096, 0, 9]"
check "dd writes 2 MiB (O_DIRECT)" dd if=/dev/urandom of="$DEV" bs=64k count=32 oflag=direct \
	conv=notrunc status=none
v=$(idns 'd["nuse"]')
check "id-ns: NUSE 4096 (got $v)" test "$v" = 4096
dd if=/dev/urandom of="$DEV" bs=4k seek=768 count=1 oflag=direct conv=notrunc status=none \
	2>"$TMP/dd.err"
rc=$?
cat "$TMP/dd.err"
check "a write past the limit fails (exit $rc)" test $rc -ne 0
check "with ENOSPC: dd says \"No space left on device\"" grep -q 'No space left on device' "$TMP/dd.err"
check "an overwrite of written blocks still works" dd if=/dev/urandom of="$DEV" bs=4k seek=8 \
	count=4 oflag=direct conv=notrunc status=none
check "blkdiscard of the first 1 MiB" timeout 60 blkdiscard -o 0 -l 1048576 "$DEV"
v=$(idns 'd["nuse"]')
check "id-ns: NUSE falls to 2048 (got $v)" test "$v" = 2048
dd if="$DEV" of="$TMP/head" bs=64k count=16 iflag=direct status=none
check "the discarded range reads zeros" cmp -n 1048576 "$TMP/head" /dev/zero
check "the write that failed now succeeds" dd if=/dev/urandom of="$DEV" bs=4k seek=768 count=1 \
	oflag=direct conv=notrunc status=none
v=$(idns 'd["nuse"]')
check "id-ns: NUSE 2056 (got $v)" test "$v" = 2056
out=$(timeout 60 nvme disconnect -n $NQN 2>&1)
check "nvme disconnect ($out)" grep -q 'disconnected 1 controller' <<<"$out"
CONNECTED=0
stop_tgt "$T0"
rc=$?
check "gga_tgt shuts down cleanly (exit $rc)" test $rc -eq 0
finish
