#!/usr/bin/env bash
# Thin namespaces end to end (docs/DESIGN.md "Thin namespaces"): gga_tgt
# "back" exports a thin malloc bdev (2048 blocks, thin_blocks 1024); gga_tgt
# "front" attaches it with its NVMe/TCP host and exports that again.
# nvmf_thin.py checks Identify (THINP, NCAP, NUSE, DLFEAT), Capacity
# Exceeded with DNR on the write that finds no room (at the back and passed
# on by the front), that reads, overwrites and deallocation go on when full,
# and that deallocated space is written again.
source "$(dirname "$0")/common.sh"

NQN=nqn.2016-06.io.gga:thin
FNQN=nqn.2016-06.io.gga:thinfront
PORT=$(free_port)
FPORT=$(free_port)

# export SOCKNAME BDEV NQN PORT
export_ns() {
	rpc "$1" nvmf_create_transport '{"trtype":"TCP"}' >/dev/null &&
		rpc "$1" nvmf_create_subsystem "{\"nqn\":\"$3\",\"allow_any_host\":true}" >/dev/null &&
		rpc "$1" nvmf_subsystem_add_ns "{\"nqn\":\"$3\",\"namespace\":{\"bdev_name\":\"$2\",\"nsid\":1}}" \
			>/dev/null &&
		rpc "$1" nvmf_subsystem_add_listener "{\"nqn\":\"$3\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$4\"}}" \
			>/dev/null
}

# state_of CTRLR: the front's controller state as bdev_nvme_get_controllers shows it.
state_of() {
	rpc front bdev_nvme_get_controllers "{\"name\":\"$1\"}" 2>/dev/null | jget - 'd[0]["state"]'
}

start_tgt back -m 0x1 || {
	not_ok "gga_tgt back starts"
	finish
}
BPID=$TGT_PID
check "a thin malloc bdev: 2048 blocks, at most 1024 allocated" rpc back bdev_malloc_create \
	'{"name":"T0","num_blocks":2048,"block_size":512,"thin_blocks":1024}'
check "bdev_get_bdevs shows it thin, 0 of 1024 used" test \
	"$(rpc back bdev_get_bdevs '{"name":"T0"}' | jget - 'd[0]["thin"]')" = \
	'{"used_blocks": 0, "capacity_blocks": 1024}'
check "exported on 127.0.0.1:$PORT" export_ns back T0 $NQN "$PORT"

start_tgt front -m 0x1 || {
	not_ok "gga_tgt front starts"
	finish
}
FPID=$TGT_PID
check "front attaches the thin namespace" rpc front bdev_nvme_attach_controller \
	"{\"name\":\"B\",\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$PORT\",\"subnqn\":\"$NQN\"}"
check "and exports it on 127.0.0.1:$FPORT" export_ns front Bn1 $FNQN "$FPORT"
STATE0=$(state_of B)

timeout -k 5 60 python3 "$GGA_ROOT/test/integration/nvmf_thin.py" --port "$PORT" --nqn $NQN \
	--front-port "$FPORT" --front-nqn $FNQN
rc=$?
check "nvmf_thin.py ran to its end (exit $rc)" test $rc -eq 0

check "bdev_get_bdevs: 1024 of 1024 used at the end" test \
	"$(rpc back bdev_get_bdevs '{"name":"T0"}' | jget - 'd[0]["thin"]["used_blocks"]')" = 1024
check "the front's controller is in the state it was in ($STATE0), not failed" \
	test "$(state_of B)" = "$STATE0"
check "and its bdev is still there" bash -c "'$BIN/gga_rpc' -s '$TMP/front.sock' bdev_get_bdevs '{\"name\":\"Bn1\"}' >/dev/null"
stop_tgt "$FPID"
rc=$?
check "gga_tgt front exits 0 on SIGTERM (exit $rc)" test $rc -eq 0
stop_tgt "$BPID"
rc=$?
check "gga_tgt back exits 0 on SIGTERM (exit $rc)" test $rc -eq 0
check "no sanitizer report" bash -c "! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' $TMP/back.log $TMP/front.log"
finish
