#!/usr/bin/env bash
# gga's NVMe/TCP host against the Linux kernel's target (inside the test VM):
# nvmet + nvmet-tcp configured through configfs, one subsystem with a
# file-backed namespace, listening on 127.0.0.1. gga_tgt attaches it with
# bdev_nvme_attach_controller (the bdev must have the namespace's geometry),
# then bdevperf runs short verify workloads against it (small I/O in capsule,
# large I/O through R2T/C2H) with no mismatch and no failed I/O, and the data
# must have landed in the kernel target's file. configfs is torn down
# afterwards, whatever happened. Skips if nvmet-tcp does not load.
source "$(dirname "$0")/../../integration/common.sh"
source "$(dirname "$0")/../guest_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/run_tests.sh)"
[ -x "$BIN/bdevperf" ] || skip "$BIN/bdevperf is not built"
vm_modprobe nvmet nvmet-tcp 2>"$TMP/modprobe.err" ||
	skip "the nvmet/nvmet-tcp kernel modules do not load: $(head -1 "$TMP/modprobe.err")"
CFS=/sys/kernel/config/nvmet
[ -d "$CFS" ] || skip "no nvmet configfs at $CFS"

NQN=nqn.2016-06.io.gga:linux-nvmet-tcp
PORT_ID=41
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
IMG=$TMP/nvmet-ns.img
SIZE_MIB=32

nvmet_teardown() {
	local s=$CFS/subsystems/$NQN p=$CFS/ports/$PORT_ID
	[ -L "$p/subsystems/$NQN" ] && rm -f "$p/subsystems/$NQN"
	[ -d "$p" ] && rmdir "$p"
	if [ -d "$s" ]; then
		[ -d "$s/namespaces/1" ] && echo 0 >"$s/namespaces/1/enable" &&
			rmdir "$s/namespaces/1"
		rmdir "$s"
	fi
}
# Daemons first (they hold connections to the kernel target), then configfs.
trap 'cleanup; nvmet_teardown 2>/dev/null' EXIT

nvmet_setup() {
	local s=$CFS/subsystems/$NQN p=$CFS/ports/$PORT_ID
	mkdir "$s" || return 1
	echo 1 >"$s/attr_allow_any_host" || return 1
	echo GGANVMET01 >"$s/attr_serial" 2>/dev/null
	mkdir "$s/namespaces/1" || return 1
	echo -n "$IMG" >"$s/namespaces/1/device_path" || return 1
	# The file lives on tmpfs, which has no O_DIRECT.
	echo 1 >"$s/namespaces/1/buffered_io" || return 1
	echo 1 >"$s/namespaces/1/enable" || return 1
	mkdir "$p" || return 1
	echo tcp >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo 127.0.0.1 >"$p/addr_traddr" && echo "$PORT" >"$p/addr_trsvcid" || return 1
	ln -s "$s" "$p/subsystems/$NQN"
}

truncate -s ${SIZE_MIB}M "$IMG"
check "nvmet: subsystem with a ${SIZE_MIB} MiB file namespace, TCP port 127.0.0.1:$PORT" nvmet_setup
check "the kernel target listens on 127.0.0.1:$PORT" vm_wait_tcp_port "$PORT" 127.0.0.1 20

ATTACH="{\"name\":\"kn\",\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$PORT\",\"subnqn\":\"$NQN\"}"

# gga_tgt attaches the kernel's subsystem: one bdev with its geometry.
if start_tgt h0 --mem-size 64m; then
	H0=$TGT_PID
	if rpc h0 bdev_nvme_attach_controller "$ATTACH" >"$TMP/attach.json" 2>&1; then
		ok "bdev_nvme_attach_controller to the Linux target"
		check "the attach created bdev knn1" grep -q '"knn1"' "$TMP/attach.json"
		rpc h0 bdev_get_bdevs '{"name":"knn1"}' >"$TMP/bdev.json"
		check "knn1 has ${SIZE_MIB} MiB in 512-byte blocks" \
			test "$(jget "$TMP/bdev.json" 'd[0]["block_size"] * d[0]["num_blocks"]')" = $((SIZE_MIB << 20))
		check "bdev_nvme_get_controllers shows kn" \
			bash -c "$BIN/gga_rpc -s $TMP/h0.sock bdev_nvme_get_controllers | grep -q '\"kn\"'"
		check "bdev_nvme_detach_controller" rpc h0 bdev_nvme_detach_controller '{"name":"kn"}'
	else
		not_ok "bdev_nvme_attach_controller to the Linux target"
		cat "$TMP/attach.json"
	fi
	stop_tgt "$H0"
	check "gga_tgt exits cleanly after talking to the Linux target" test $? -eq 0
else
	not_ok "gga_tgt starts"
fi

write_config "$TMP/bp.json" \
	"{\"method\":\"bdev_nvme_attach_controller\",\"params\":$ATTACH}"

# bdevperf NAME ARGS...: a bounded run against knn1.
bp() {
	local name=$1
	shift
	timeout -k 5 120 "$BIN/bdevperf" --json "$TMP/bp.json" -m 0x1 --mem-size 64m -b knn1 "$@" \
		>"$TMP/$name.out" 2>&1
}

bp verify4k -q 16 -o 4096 -w verify -t 2
rc=$?
check "bdevperf 4 KiB verify against nvmet-tcp: exit 0 (rc $rc)" test $rc -eq 0
check "4 KiB verify: blocks compared, 0 mismatches, no failed I/O" \
	bash -c "grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$TMP/verify4k.out' &&
		! grep -qi 'run failed' '$TMP/verify4k.out'"
# 128 KiB is beyond the kernel target's in-capsule data size: writes wait for
# R2T, reads come back in several C2H data PDUs.
bp verify128k -q 4 -o 131072 -w verify -t 2
rc=$?
check "bdevperf 128 KiB verify (R2T, split C2H): exit 0 (rc $rc)" test $rc -eq 0
check "128 KiB verify: 0 mismatches" \
	grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$TMP/verify128k.out"
if [ "$N_FAIL" -ne 0 ]; then
	tail -n 30 "$TMP/verify4k.out" "$TMP/verify128k.out"
fi
zeros=$(head -c $((SIZE_MIB << 20)) /dev/zero | sha256sum)
check "the data landed in the kernel target's namespace file" \
	test "$(sha256sum <"$IMG")" != "$zeros"

cleanup
PIDS=()
nvmet_teardown
check "configfs torn down" test ! -e "$CFS/subsystems/$NQN" -a ! -e "$CFS/ports/$PORT_ID"
finish
