#!/usr/bin/env bash
# gga's NVMe/RDMA host against the Linux kernel's own target, inside the test
# VM (test/vm/vm_run.sh) over SoftRoCE: nvmet + nvmet-rdma configured through
# configfs with a file-backed namespace on 10.99.0.1, attached by bdevperf
# (bdev_nvme_attach_controller trtype rdma in its JSON configuration); a short
# verify run must finish with no failed I/O and no mismatch. The configfs
# objects are removed afterwards, whatever happened.
source "$(dirname "$0")/../../integration/common.sh"
source "$GGA_ROOT/test/vm/guest_lib.sh"

NQN=nqn.2016-06.io.gga:nvmet-rdma-ns
PORT_ID=7
CFS=/sys/kernel/config/nvmet

vm_in_guest || skip "not inside the test VM (run through test/vm/vm_run.sh)"
[ -x "$BIN/bdevperf" ] || skip "$BIN/bdevperf is not built"
vm_rxe_setup || skip "SoftRoCE (rdma_rxe) is not available in this guest"
vm_modprobe nvmet nvmet-rdma 2>/dev/null || skip "the nvmet-rdma kernel module does not load"
if [ ! -d "$CFS" ]; then
	mount -t configfs none /sys/kernel/config 2>/dev/null
	[ -d "$CFS" ] || skip "no nvmet configfs at $CFS"
fi

nvmet_teardown() {
	rm -f "$CFS/ports/$PORT_ID/subsystems/$NQN" 2>/dev/null
	rmdir "$CFS/ports/$PORT_ID" 2>/dev/null
	if [ -d "$CFS/subsystems/$NQN" ]; then
		echo 0 >"$CFS/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
		rmdir "$CFS/subsystems/$NQN/namespaces/1" 2>/dev/null
		rmdir "$CFS/subsystems/$NQN" 2>/dev/null
	fi
}
trap 'cleanup; nvmet_teardown' EXIT

# nvmet_setup FILE: subsystem NQN, namespace 1 on FILE, RDMA port on 10.99.0.1:4420.
nvmet_setup() {
	local s=$CFS/subsystems/$NQN p=$CFS/ports/$PORT_ID
	mkdir "$s" && echo 1 >"$s/attr_allow_any_host" &&
		mkdir "$s/namespaces/1" &&
		echo -n "$1" >"$s/namespaces/1/device_path" &&
		# tmpfs has no O_DIRECT: the file backend must use buffered I/O.
		echo 1 >"$s/namespaces/1/buffered_io" &&
		echo 1 >"$s/namespaces/1/enable" &&
		mkdir "$p" &&
		echo rdma >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo "$VM_RDMA_ADDR" >"$p/addr_traddr" && echo 4420 >"$p/addr_trsvcid" &&
		ln -s "$s" "$p/subsystems/$NQN"
}

truncate -s 32M "$TMP/ns.img"
check "nvmet: subsystem, file namespace and RDMA port on $VM_RDMA_ADDR:4420" nvmet_setup "$TMP/ns.img"

write_config "$TMP/bp.json" \
	"{\"method\":\"bdev_nvme_attach_controller\",\"params\":{\"name\":\"kn\",\"trtype\":\"rdma\",\"adrfam\":\"ipv4\",\"traddr\":\"$VM_RDMA_ADDR\",\"trsvcid\":\"4420\",\"subnqn\":\"$NQN\"}}"

# The kernel's listener can take a moment: retry the attach a few times.
bp_run() {
	local name=$1 i rc
	shift
	for i in 1 2 3; do
		timeout -k 5 120 "$BIN/bdevperf" --json "$TMP/bp.json" -m 0x1 --mem-size 64m "$@" \
			>"$TMP/$name.out" 2>&1
		rc=$?
		grep -q 'cannot connect' "$TMP/$name.out" || break
		sleep 1
	done
	return $rc
}

bp_run verify -q 8 -o 4096 -w verify -t 2
rc=$?
check "bdevperf verify over NVMe/RDMA against nvmet-rdma: exit 0 (rc $rc)" test $rc -eq 0
check "verify: blocks compared, 0 mismatches, no failed I/O" \
	bash -c "grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$TMP/verify.out' &&
		! grep -q 'run failed' '$TMP/verify.out'"
# Larger than nvmet-rdma's 4 KiB in-capsule data: writes go by keyed SGL (RDMA READ).
bp_run big -q 4 -o 65536 -w verify -t 1
rc=$?
check "bdevperf verify with 64 KiB I/O (keyed SGL both ways): exit 0 (rc $rc)" test $rc -eq 0
check "64 KiB verify: 0 mismatches" grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' \
	"$TMP/big.out"
if [ "$N_FAIL" -ne 0 ]; then
	tail -n 30 "$TMP/verify.out" "$TMP/big.out"
fi
cleanup
nvmet_teardown
trap - EXIT
check "configfs torn down" test ! -e "$CFS/subsystems/$NQN" -a ! -e "$CFS/ports/$PORT_ID"
finish
