#!/usr/bin/env bash
# ANA with the Linux kernel host (inside the test VM): gga_tgt exports one
# namespace of a subsystem with ana_reporting on two listeners of
# 127.0.0.1, one optimized and one inaccessible; the kernel's native
# multipath attaches both paths to one block device and reads gga's ANA log
# page (each path's ana_state in sysfs). Then the states swap (the ANA
# change event makes the kernel read the log again), and later the first
# listener goes away: O_DIRECT writes and reads on the multipath device
# keep working and return what was written.
source "$(dirname "$0")/../../integration/common.sh"
source "$(dirname "$0")/../guest_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/run_tests.sh)"
command -v nvme >/dev/null || skip "nvme-cli is not installed"

HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
HOSTID=$(cat /proc/sys/kernel/random/uuid)
NQN=nqn.2016-06.io.gga:vmana
CONNECTED=0

vm_cleanup() {
	[ $CONNECTED -eq 0 ] || nvme disconnect -n $NQN >/dev/null 2>&1
	cleanup
}
trap vm_cleanup EXIT

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
addr() {
	printf '{"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1", "trsvcid": "%s"}' "$1"
}
ana() { # PORT STATE
	rpc t0 nvmf_subsystem_listener_set_ana_state --nqn $NQN --ana_state "$2" \
		--listen_address "$(addr "$1")" >/dev/null
}
states_are() { # PA_STATE PB_STATE
	[ "$(vm_path_ana_state "$PA") $(vm_path_ana_state "$PB")" = "$1 $2" ]
}
rw_check() { # TAG: write 1 MiB at a fresh offset, read it back, compare
	local off=$((RANDOM % 16))
	head -c 1048576 /dev/urandom >"$TMP/pat.$1"
	dd if="$TMP/pat.$1" of="$DEV" bs=64k seek=$((off * 16)) oflag=direct conv=notrunc,fsync \
		status=none || return 1
	dd if="$DEV" bs=64k skip=$((off * 16)) count=16 iflag=direct status=none | cmp -s - "$TMP/pat.$1"
}

vm_modprobe nvme-tcp || skip "the nvme-tcp module does not load"
[ "$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)" = Y ] ||
	skip "the kernel's NVMe native multipath is off"
PA=$(free_port)
PB=$(free_port)
start_tgt t0 --mem-size 64m || {
	not_ok "gga_tgt starts"
	finish
}
rpc t0 bdev_malloc_create --name M0 --num_blocks 65536 --block_size 512 >/dev/null &&
	rpc t0 nvmf_create_transport --trtype tcp >/dev/null &&
	rpc t0 nvmf_create_subsystem --nqn $NQN --serial_number GGAVMANA --allow_any_host true \
		--ana_reporting true --max_namespaces 4 >/dev/null &&
	rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M0\"}}" >/dev/null &&
	rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA")}" >/dev/null &&
	rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PB"), \"ana_state\": \"inaccessible\"}" >/dev/null
check "a subsystem with ana_reporting on two listeners" test $? -eq 0

for port in "$PA" "$PB"; do
	timeout 60 nvme connect -t tcp -a 127.0.0.1 -s "$port" -n $NQN --hostnqn "$HOSTNQN" \
		--hostid "$HOSTID" --ctrl-loss-tmo 30 >"$TMP/conn.log" 2>&1 && CONNECTED=1 ||
		{ cat "$TMP/conn.log"; dmesg | tail -15; tail -5 "$TMP/t0.log"; }
	check "nvme connect through $port" test $CONNECTED -eq 1
done
DEV=$(vm_nvme_wait_ns $NQN 30) || DEV=
check "one multipath block device ($DEV)" test -n "$DEV"
check "two controllers in its subsystem" \
	test "$(grep -lx $NQN /sys/class/nvme/nvme*/subsysnqn 2>/dev/null | wc -l)" = 2
check "the kernel read gga's ANA log: A optimized, B inaccessible" \
	vm_retry 10 states_are optimized inaccessible
check "writes and reads through the multipath device" rw_check a

ana "$PA" inaccessible
ana "$PB" optimized
check "after the ANA change event: A inaccessible, B optimized" \
	vm_retry 15 states_are inaccessible optimized
check "writes and reads go on (through B)" rw_check b
rpc t0 nvmf_subsystem_remove_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA")}" >/dev/null
check "with A's listener gone, writes and reads still work" rw_check c
check "the kernel logged no I/O error on the device" \
	bash -c "! dmesg | grep -E 'I/O error, dev $(basename "$DEV")'"
out=$(timeout 60 nvme disconnect -n $NQN 2>&1)
check "nvme disconnect ($out)" bash -c "echo '$out' | grep -q disconnected"
CONNECTED=0
stop_tgt "$TGT_PID" TERM
check "gga_tgt shuts down cleanly (exit 0)" test $? -eq 0
finish
