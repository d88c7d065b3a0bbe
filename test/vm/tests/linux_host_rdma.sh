#!/usr/bin/env bash
# The Linux kernel's own NVMe/RDMA host (nvme-cli, nvme-rdma) against gga_tgt,
# inside the test VM (test/vm/vm_run.sh) over SoftRoCE: an RDMA transport and
# malloc namespaces listening on 10.99.0.1; discovery over RDMA (entries with
# trtype rdma and the RDMA TSAS), connect, random data written with O_DIRECT
# at several offsets and sizes (4 KiB, 64 KiB, 128 KiB: in-capsule data and
# keyed SGLs both ways), read back and compared by sha256; a read past the
# end fails cleanly; the target does not spin while a host is connected and
# idle; nvmf_get_stats and save_config show the transport; disconnect; and
# gga_tgt exits 0 on SIGTERM. Then the same kernel host against the gga bdev
# of the three-target topology run over RDMA (scripts/gga_topology.sh --trtype
# rdma): connect, data written and read back, disconnect, clean exits.
# Everything started is stopped, even on failure.
source "$(dirname "$0")/../../integration/common.sh"
source "$GGA_ROOT/test/vm/guest_lib.sh"

NQN=nqn.2016-06.io.gga:rdma-cnode1
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:6c1f2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b
PORT=4420
ADDR=$VM_RDMA_ADDR

vm_in_guest || skip "not inside the test VM (run through test/vm/vm_run.sh)"
command -v nvme >/dev/null || skip "nvme-cli is not installed"
vm_rxe_setup || skip "SoftRoCE (rdma_rxe) is not available in this guest"
vm_modprobe nvme-rdma 2>/dev/null || skip "the nvme-rdma kernel module does not load"
TOPO=$TMP/topo
TOPO_NQN=nqn.2016-06.io.gga:gga0
topo_down() {
	[ -f "$TOPO/topology.env" ] && bash "$GGA_ROOT/scripts/gga_topology.sh" down "$TOPO" >/dev/null 2>&1
	return 0
}
trap 'vm_nvme_disconnect_all; topo_down; cleanup' EXIT

start_tgt t0 -m 0x3 --mem-size 128m || {
	not_ok "gga_tgt starts"
	finish
}
ok "gga_tgt starts"

listener() {
	printf '{"nqn": "%s", "listen_address": {"trtype": "RDMA", "adrfam": "IPv4", "traddr": "%s", "trsvcid": "%s"}}' \
		"$1" "$ADDR" "$2"
}

rpc t0 bdev_malloc_create --name M0 --num_blocks 32768 --block_size 512 >/dev/null
# Few data buffers (three 128 KiB transfers' worth), so parallel I/O has to wait for them.
check "nvmf_create_transport RDMA" rpc t0 nvmf_create_transport --trtype RDMA \
	--num_shared_buffers 48 --buf_cache_size 0
check_fails "a second RDMA transport is refused" rpc t0 nvmf_create_transport --trtype RDMA
rpc t0 nvmf_get_transports >"$TMP/tr.json"
check "nvmf_get_transports: RDMA with in_capsule_data_size 4096" \
	test "$(jget "$TMP/tr.json" '[t["in_capsule_data_size"] for t in d if t["trtype"] == "RDMA"]')" = '[4096]'
check "nvmf_create_subsystem" rpc t0 nvmf_create_subsystem --nqn $NQN --serial_number GGARDMA1 \
	--allow_any_host true
rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M0\"}}" >/dev/null
check "add_listener RDMA $ADDR:$PORT" rpc t0 nvmf_subsystem_add_listener "$(listener $NQN $PORT)"
check "the discovery subsystem listens over RDMA too" rpc t0 nvmf_subsystem_add_listener \
	"$(listener nqn.2014-08.org.nvmexpress.discovery $PORT)"

# Discovery over RDMA: the log page lists the subsystem with trtype rdma and the RDMA TSAS.
vm_retry 10 nvme discover -t rdma -a "$ADDR" -s $PORT --hostnqn "$HOSTNQN" \
	>"$TMP/disc.txt" 2>&1
check "nvme discover -t rdma succeeds" grep -q "subnqn: *$NQN" "$TMP/disc.txt"
check "discovery entry: trtype rdma" grep -q "trtype: *rdma" "$TMP/disc.txt"
check "discovery entry: RDMA TSAS (connected QP, no provider, RDMA CM)" bash -c \
	"grep -q 'rdma_prtype: *not specified' '$TMP/disc.txt' &&
	 grep -q 'rdma_qptype: *connected' '$TMP/disc.txt' &&
	 grep -q 'rdma_cms: *rdma-cm' '$TMP/disc.txt'"

# ns_of NQN: the block device of NQN's first namespace. /sys/block/X/device is
# the controller, or with native multipath the subsystem; both name the NQN.
ns_of() {
	local b
	for b in /sys/block/nvme*n*; do
		case "$(basename "$b")" in nvme*c*n*) continue ;; esac
		if [ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$1" ]; then
			echo "/dev/$(basename "$b")"
			return 0
		fi
	done
	return 1
}
wait_ns() {
	vm_retry 30 ns_of "$1" >/dev/null && ns_of "$1"
}

# A connect request without NVMe/RDMA private data (librdmacm's example
# client; RoCE pads it to 56 zero bytes, so hsqsize is 0) is rejected with the
# NVMe/RDMA reject status, and the target carries on.
if command -v rdma_client >/dev/null; then
	check_fails "a non-NVMe RDMA connect request is refused" \
		timeout 30 rdma_client -s "$ADDR" -p $PORT
	check "the target rejected it with an NVMe/RDMA status" \
		grep -q "rejecting a connection on $ADDR:$PORT: invalid" "$TMP/t0.log"
fi

check "nvme connect -t rdma" timeout 60 nvme connect -t rdma -n $NQN -a "$ADDR" -s $PORT \
	--hostnqn "$HOSTNQN"
DEV=$(wait_ns $NQN)
check "the namespace appears ($DEV)" test -b "$DEV"
if [ ! -b "$DEV" ]; then
	nvme list
	for c in /sys/class/nvme/nvme*; do
		echo "$c: $(cat "$c/subsysnqn" "$c/state" 2>/dev/null | tr '\n' ' ')"
	done
	dmesg | grep -i nvme | tail -20
	tail -30 "$TMP/t0.log"
	finish
fi
check "namespace size is 16 MiB" test "$(blockdev --getsize64 "$DEV")" = 16777216

# dd_rw OFFSET_BYTES BS COUNT
dd_rw() {
	local off=$1 bs=$2 count=$3 f=$TMP/data.$1 bytes
	bytes=$(($(numfmt --from=iec "$bs") * count))
	head -c "$bytes" /dev/urandom >"$f"
	dd if="$f" of="$DEV" bs="$bs" count="$count" seek="$off" oflag=direct,seek_bytes \
		status=none || return 1
	dd if="$DEV" of="$f.back" bs="$bs" count="$count" skip="$off" iflag=direct,skip_bytes \
		status=none || return 1
	[ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$(sha256sum <"$f.back" | cut -d' ' -f1)" ]
}
check "4 KiB x 64 at offset 0 (in-capsule writes): read back equal" dd_rw 0 4K 64
check "64 KiB x 16 at offset 1 MiB + 512: read back equal" dd_rw $((1048576 + 512)) 64K 16
check "128 KiB x 16 at offset 4 MiB (largest transfer): read back equal" dd_rw 4194304 128K 16
check "512 B x 8 at the last 4 KiB: read back equal" dd_rw $((16777216 - 4096)) 512 8
# Eight writers at once, then eight readers: queue depth on both I/O queues.
par_rw() {
	local i pids=()
	for i in 0 1 2 3 4 5 6 7; do
		head -c 1048576 /dev/urandom >"$TMP/par.$i"
	done
	# Wait for these by pid: a bare `wait` would wait for gga_tgt too.
	for i in 0 1 2 3 4 5 6 7; do
		dd if="$TMP/par.$i" of="$DEV" bs=128K count=8 seek=$((64 + 8 * i)) \
			oflag=direct status=none &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || return 1
	done
	pids=()
	for i in 0 1 2 3 4 5 6 7; do
		dd if="$DEV" of="$TMP/par.$i.back" bs=128K count=8 skip=$((64 + 8 * i)) \
			iflag=direct status=none &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || return 1
	done
	for i in 0 1 2 3 4 5 6 7; do
		cmp "$TMP/par.$i" "$TMP/par.$i.back" || return 1
	done
}
check "8 parallel writers and readers of 1 MiB each (128 KiB I/O): read back equal" par_rw
dd if="$DEV" of="$TMP/first" bs=4096 count=1 iflag=direct status=none
check "the first 4 KiB block still holds its data" cmp -n 4096 "$TMP/data.0" "$TMP/first"

# A bad request fails cleanly: a read past the end of the namespace.
check_fails "read past the end fails" nvme read "$DEV" --start-block=32768 --block-count=7 \
	--data-size=4096 --data=/dev/null
check "the target is alive after the failed read" dd_rw 8192 4K 4

# An idle target with a connected host does not spin: its reactors keep going
# to sleep (keep-alives aside), and it uses a small share of a CPU. A spinning
# reactor would never sleep and use all of one.
hz=$(getconf CLK_TCK)
sleeps() {
	rpc t0 framework_get_reactors | jget - "min(r['sleeps'] for r in d['reactors'])"
}
sleep 1
s0=$(sleeps)
t0=$(proc_cpu_ticks "$TGT_PID")
sleep 4
t1=$(proc_cpu_ticks "$TGT_PID")
s1=$(sleeps)
pct=$(((t1 - t0) * 100 / (4 * hz)))
echo "idle gga_tgt with an RDMA host connected: ${pct}% CPU over 4 s, reactor sleeps $s0 -> $s1"
check "idle with a connected host: every reactor sleeps ($s0 -> $s1)" test "$s1" -gt "$s0"
check "idle with a connected host: < 30% CPU (used ${pct}%)" test $pct -lt 30

rpc t0 nvmf_get_stats >"$TMP/stats.json"
rdma_sum() {
	jget "$TMP/stats.json" "sum(t['$1'] for pg in d['poll_groups'] for t in pg['transports'] if t['trtype'] == 'RDMA')"
}
check "nvmf_get_stats: RDMA connections counted ($(rdma_sum connections))" \
	test "$(rdma_sum connections)" -ge 2
check "nvmf_get_stats: in-capsule data commands ($(rdma_sum in_capsule_data_commands))" \
	test "$(rdma_sum in_capsule_data_commands)" -gt 0
echo "buffer waits: $(rdma_sum buffer_waits), send queue waits: $(rdma_sum send_queue_waits)"
check "nvmf_get_stats: RDMA READs ($(rdma_sum rdma_reads)) and WRITEs ($(rdma_sum rdma_writes))" \
	test "$(rdma_sum rdma_reads)" -gt 0 -a "$(rdma_sum rdma_writes)" -gt 0
rpc t0 save_config >"$TMP/saved.json"
# nvmf_has EXPR: true if some nvmf call `c` of the saved configuration satisfies EXPR.
nvmf_has() {
	test "$(jget "$TMP/saved.json" "any($1 for s in d['subsystems'] if s['subsystem'] == 'nvmf' for c in s['config'])")" = true
}
check "save_config has the RDMA transport" \
	nvmf_has "c['method'] == 'nvmf_create_transport' and c['params']['trtype'] == 'RDMA'"
check "save_config has the RDMA listener" nvmf_has \
	"c['method'] == 'nvmf_subsystem_add_listener' and c['params']['listen_address']['trtype'] == 'RDMA'"

check "nvme disconnect" timeout 30 nvme disconnect -n $NQN
check "the namespace is gone" bash -c "! cat /sys/class/nvme/nvme*/subsysnqn 2>/dev/null | grep -qx $NQN"

# A host connected and busy at shutdown: SIGTERM still ends with exit 0
# (commands in flight come back flushed or completed, nothing hangs).
timeout 60 nvme connect -t rdma -n $NQN -a "$ADDR" -s $PORT --hostnqn "$HOSTNQN" >/dev/null 2>&1
DEV=$(wait_ns $NQN)
busy_pids=()
if [ -b "$DEV" ]; then
	for i in 0 1 2 3; do
		timeout 60 bash -c "while :; do dd if='$DEV' of=/dev/null bs=128K count=64 \
			iflag=direct status=none || exit 0; done" &
		busy_pids+=($!)
	done
	sleep 1
fi
stop_tgt "$TGT_PID"
rc=$?
check "gga_tgt exits 0 on SIGTERM with an RDMA host reading (rc $rc)" test $rc -eq 0
vm_nvme_disconnect_all
for p in "${busy_pids[@]}"; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
if [ $N_FAIL -gt 0 ]; then
	echo "--- gga_tgt log"
	tail -50 "$TMP/t0.log"
fi
vm_nvme_disconnect_all

# The gga bdev over three half-block targets, every hop over RDMA.
if bash "$GGA_ROOT/scripts/gga_topology.sh" up "$TOPO" --size 16 --trtype rdma --traddr "$ADDR" \
	>"$TMP/topo-up.log" 2>&1; then
	ok "gga_topology.sh up --trtype rdma (three half-block targets + front)"
	FPORT=$(sed -n 's/^base_port=//p' "$TOPO/topology.env")
	check "nvme connect -t rdma to the front's gga0 ($ADDR:$FPORT)" timeout 60 nvme connect -t rdma \
		-n $TOPO_NQN -a "$ADDR" -s "$FPORT" --hostnqn "$HOSTNQN"
	DEV=$(wait_ns $TOPO_NQN)
	if [ -b "$DEV" ]; then
		check "gga namespace size is 16 MiB" test "$(blockdev --getsize64 "$DEV")" = 16777216
		check "gga over RDMA: 4 KiB x 32 at offset 0: read back equal" dd_rw 0 4K 32
		check "gga over RDMA: 128 KiB x 8 at 8 MiB: read back equal" dd_rw 8388608 128K 8
		check "nvme disconnect from the front" timeout 30 nvme disconnect -n $TOPO_NQN
	else
		not_ok "the gga namespace appears"
		tail -20 "$TOPO/front.log"
	fi
	check "gga_topology.sh down" bash "$GGA_ROOT/scripts/gga_topology.sh" down "$TOPO"
	for n in front hb0 hb1 hb2; do
		check "$n exited with status 0" vm_retry 5 grep -qx 0 "$TOPO/$n.rc"
	done
	rm -f "$TOPO/topology.env"
else
	not_ok "gga_topology.sh up --trtype rdma"
	cat "$TMP/topo-up.log"
fi
vm_nvme_disconnect_all
finish
