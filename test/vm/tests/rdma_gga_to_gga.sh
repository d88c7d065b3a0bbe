#!/usr/bin/env bash
# gga to gga over NVMe/RDMA, inside the test VM over SoftRoCE: a gga_tgt
# exporting two malloc namespaces (one with 64 bytes of metadata per block,
# exported as an extended-LBA format) over RDMA on 10.99.0.1; bdevperf
# attaches both with trtype rdma and verifies with small (in-capsule) and
# large (keyed SGL) writes; then a second gga_tgt attaches by RPC, reports the
# controller as RDMA (get_controllers, save_config), does not spin while idle,
# survives the target being SIGKILLed and restarted (reconnect), and detaches.
source "$(dirname "$0")/../../integration/common.sh"
source "$GGA_ROOT/test/vm/guest_lib.sh"

NQN=nqn.2016-06.io.gga:rdma-g2g
PORT=4420

vm_in_guest || skip "not inside the test VM (run through test/vm/vm_run.sh)"
[ -x "$BIN/bdevperf" ] || skip "$BIN/bdevperf is not built"
vm_rxe_setup || skip "SoftRoCE (rdma_rxe) is not available in this guest"

# setup_target SOCK: malloc namespaces exported over RDMA.
setup_target() {
	local s=$1
	rpc "$s" bdev_malloc_create '{"name":"M0","num_blocks":32768,"block_size":512}' >/dev/null &&
		rpc "$s" bdev_malloc_create \
			'{"name":"M1","num_blocks":8192,"block_size":512,"md_size":64}' >/dev/null &&
		rpc "$s" nvmf_create_transport '{"trtype":"RDMA"}' >/dev/null &&
		rpc "$s" nvmf_create_subsystem "{\"nqn\":\"$NQN\",\"allow_any_host\":true}" >/dev/null &&
		rpc "$s" nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" \
			>/dev/null &&
		rpc "$s" nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M1\"}}" \
			>/dev/null &&
		rpc "$s" nvmf_subsystem_add_listener \
			"{\"nqn\":\"$NQN\",\"listen_address\":{\"trtype\":\"rdma\",\"adrfam\":\"ipv4\",\"traddr\":\"$VM_RDMA_ADDR\",\"trsvcid\":\"$PORT\"}}" \
			>/dev/null
}

attach_params() {
	printf '{"name":"%s","trtype":"rdma","adrfam":"ipv4","traddr":"%s","trsvcid":"%s","subnqn":"%s"}' \
		"$1" "$VM_RDMA_ADDR" "$PORT" "$NQN"
}

start_tgt tgt -m 0x1 --mem-size 64m || { not_ok "target starts"; finish; }
tgt_pid=$TGT_PID
check "target: malloc namespaces exported over RDMA on $VM_RDMA_ADDR:$PORT" setup_target tgt
rpc tgt save_config >"$TMP/tgt.json"

write_config "$TMP/bp.json" \
	"{\"method\":\"bdev_nvme_attach_controller\",\"params\":$(attach_params g2g)}"

bp() {
	local name=$1
	shift
	timeout -k 5 120 "$BIN/bdevperf" --json "$TMP/bp.json" -m 0x2 --mem-size 64m "$@" \
		>"$TMP/$name.out" 2>&1
}
verified() {
	grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$1" && ! grep -q 'run failed' "$1"
}

bp small -q 8 -o 4096 -w verify -t 2
rc=$?
check "bdevperf verify, 4 KiB I/O on both namespaces: exit 0 (rc $rc)" test $rc -eq 0
check "4 KiB verify: 0 mismatches, no failed I/O" verified "$TMP/small.out"
check "both namespaces ran (g2gn1 and g2gn2)" \
	bash -c "grep -q g2gn1 '$TMP/small.out' && grep -q g2gn2 '$TMP/small.out'"
bp large -q 4 -o 65536 -w verify -t 1
rc=$?
check "bdevperf verify, 64 KiB I/O (keyed SGL): exit 0 (rc $rc)" test $rc -eq 0
check "64 KiB verify: 0 mismatches, no failed I/O" verified "$TMP/large.out"
[ "$N_FAIL" -eq 0 ] || tail -n 30 "$TMP/small.out" "$TMP/large.out" "$TMP/tgt.log"

# A gga_tgt as host: attach by RPC, inspect, reconnect, detach.
start_tgt host -m 0x2 --mem-size 64m || { not_ok "host gga_tgt starts"; finish; }
host_pid=$TGT_PID
rpc host bdev_nvme_attach_controller "$(attach_params r0)" >"$TMP/attach.out" 2>&1
check "bdev_nvme_attach_controller trtype rdma" test $? -eq 0
check "attach returns the two namespaces' bdevs" grep -q 'r0n2' "$TMP/attach.out"
state() {
	rpc host bdev_nvme_get_controllers '{"name":"r0"}' 2>/dev/null | jget - 'd[0]["state"]'
}
rpc host bdev_nvme_get_controllers >"$TMP/ctrlrs.out"
check "get_controllers names the transport RDMA" grep -q '"RDMA"' "$TMP/ctrlrs.out"
rpc host save_config >"$TMP/host.json"
# Event-driven idle: an attached, idle controller sleeps on its completion channel.
t0=$(proc_cpu_ticks "$host_pid")
sleep 3
t1=$(proc_cpu_ticks "$host_pid")
check "idle host with an attached RDMA controller does not spin ($((t1 - t0)) ticks in 3 s)" \
	test $((t1 - t0)) -lt 60
check "save_config writes trtype rdma" grep -q '"trtype": *"rdma"' "$TMP/host.json"

stop_tgt "$tgt_pid" KILL
wait_state() {
	local want=$1 i
	for i in $(seq 1 150); do
		[ "$(state)" = "$want" ] && return 0
		sleep 0.2
	done
	return 1
}
check "target SIGKILLed: the host controller is reconnecting" wait_state reconnecting
start_tgt tgt2 -m 0x1 --mem-size 64m --json "$TMP/tgt.json" || not_ok "target restarts"
check "target restarted: the host controller reconnects over RDMA" wait_state connected
check "reconnect counted" \
	test "$(rpc host bdev_nvme_get_controllers '{"name":"r0"}' | jget - 'd[0]["reconnects"]')" -ge 1
rpc host bdev_nvme_detach_controller '{"name":"r0"}' >/dev/null
check "bdev_nvme_detach_controller" test $? -eq 0
check "no controller left" test "$(rpc host bdev_nvme_get_controllers | jget - 'len(d)')" = 0
stop_tgt "$host_pid"
check "host gga_tgt exits 0" test $? -eq 0
[ "$N_FAIL" -eq 0 ] || tail -n 30 "$TMP/host.log" "$TMP/tgt2.log"
finish
