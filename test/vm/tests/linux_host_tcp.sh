#!/usr/bin/env bash
# Linux-host interop over NVMe/TCP (inside the test VM): the kernel's own
# NVMe/TCP host (nvme-cli + nvme-tcp) attaches gga_tgt namespaces on
# 127.0.0.1, writes random data with O_DIRECT at several offsets, reads it
# back (also after a reconnect) and compares checksums, then disconnects
# (its shutdown notification, CC.SHN, must complete at once on the target).
# On the malloc namespace, nvme-cli's resv-register/acquire/report/release,
# and a preempt by a second host that fences the kernel's writes.
#   1. a malloc namespace (512-byte blocks) on one gga_tgt;
#   2. the gga bdev over three half-block targets (scripts/gga_topology.sh),
#      exported by the front gga_tgt.
# The daemons must survive the kernel host and shut down cleanly.
source "$(dirname "$0")/../../integration/common.sh"
source "$(dirname "$0")/../guest_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/run_tests.sh)"
command -v nvme >/dev/null || skip "nvme-cli is not installed"

HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
HOSTID=$(cat /proc/sys/kernel/random/uuid)
NQN=nqn.2016-06.io.gga:vmcnode1
TOPO_NQN=nqn.2016-06.io.gga:gga0
TOPO=$TMP/topo
CONNECTED=()

# The kernel host keeps reconnecting to a vanished target for minutes:
# disconnect before the daemons go away, on every exit path.
vm_cleanup() {
	local n
	for n in "${CONNECTED[@]}"; do
		nvme disconnect -n "$n" >/dev/null 2>&1
	done
	if [ -f "$TOPO/topology.env" ]; then
		bash "$GGA_ROOT/scripts/gga_topology.sh" down "$TOPO" >/dev/null 2>&1
	fi
	cleanup
}
trap vm_cleanup EXIT

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

check "nvme-tcp module loads" vm_modprobe nvme-tcp

# discover_has PORT NQN: the discovery log of 127.0.0.1:PORT has an NVMe/TCP
# entry for NQN at that address and port.
discover_has() {
	local port=$1 nqn=$2
	timeout 60 nvme discover -t tcp -a 127.0.0.1 -s "$port" --hostnqn "$HOSTNQN" -o json \
		>"$TMP/disc.json" 2>"$TMP/disc.err" || {
		cat "$TMP/disc.err"
		return 1
	}
	jget "$TMP/disc.json" "[r for r in d['records'] if r['subnqn'] == '$nqn' and r['trtype'] == 'tcp' \
		and r['traddr'] == '127.0.0.1' and r['trsvcid'] == '$port' and r['adrfam'] == 'ipv4']" |
		grep -q subnqn || {
		cat "$TMP/disc.json"
		return 1
	}
}

# connect PORT NQN: nvme connect, then wait for the namespace's block device.
connect() {
	local port=$1 nqn=$2
	timeout 60 nvme connect -t tcp -a 127.0.0.1 -s "$port" -n "$nqn" \
		--hostnqn "$HOSTNQN" --hostid "$HOSTID" --ctrl-loss-tmo 5 >"$TMP/conn.log" 2>&1 || {
		cat "$TMP/conn.log"
		return 1
	}
	CONNECTED+=("$nqn")
	DEV=$(vm_nvme_wait_ns "$nqn" 30) || return 1
	echo "  $nqn: $DEV"
}

disconnect() {
	local nqn=$1 out
	out=$(timeout 60 nvme disconnect -n "$nqn" 2>&1)
	echo "  $out"
	echo "$out" | grep -q 'disconnected 1 controller' || return 1
	# The block device goes away with the controller.
	vm_retry 20 bash -c "! grep -qx '$nqn' /sys/class/nvme/nvme*/subsysnqn 2>/dev/null"
}

# write_patterns DEV TAG OFFSET_MIB...: 1 MiB of random data at each offset,
# O_DIRECT; remembers the checksums in $TMP/TAG.sums.
write_patterns() {
	local dev=$1 tag=$2 off
	shift 2
	: >"$TMP/$tag.sums"
	for off in "$@"; do
		head -c 1048576 /dev/urandom >"$TMP/pat"
		dd if="$TMP/pat" of="$dev" bs=64k seek=$((off * 16)) oflag=direct conv=notrunc,fsync \
			status=none || return 1
		echo "$off $(sha256sum <"$TMP/pat" | cut -d' ' -f1)" >>"$TMP/$tag.sums"
	done
}

# verify_patterns DEV TAG: read each range back with O_DIRECT and compare.
verify_patterns() {
	local dev=$1 tag=$2 off sum got
	while read -r off sum; do
		got=$(dd if="$dev" bs=64k skip=$((off * 16)) count=16 iflag=direct status=none |
			sha256sum | cut -d' ' -f1)
		if [ "$got" != "$sum" ]; then
			echo "  checksum mismatch at $off MiB: wrote $sum, read $got"
			return 1
		fi
	done <"$TMP/$tag.sums"
}

# resv_report FIELD: nvme resv-report (extended) of $DEV, one field of it:
# rtype, regctl, key0, holds0 (the first registrant's key and holder bit).
resv_report() {
	nvme resv-report "$DEV" -n 1 -e -d 255 -b 2>/dev/null | python3 -c '
import struct, sys
d = sys.stdin.buffer.read()
gen, rtype, regctl = struct.unpack_from("<IBH", d, 0)
f = {"gen": gen, "rtype": rtype, "regctl": regctl}
if regctl:
    f["holds0"] = d[64 + 2] & 1
    f["key0"] = hex(struct.unpack_from("<Q", d, 64 + 8)[0])
print(f.get(sys.argv[1]))' "$1"
}

# Reservations from the kernel host (nvme-cli), then a second host of our
# own (nvmf_resv_client.py) preempts it: the kernel's writes fail, reads go on.
resv_tests() {
	local resv="python3 $GGA_ROOT/test/integration/nvmf_resv_client.py --port $PORT --nqn $NQN"
	check "nvme resv-register" nvme resv-register "$DEV" -n 1 --nrkey=0xa --rrega=0
	check "nvme resv-acquire (Write Exclusive)" \
		nvme resv-acquire "$DEV" -n 1 --crkey=0xa --rtype=1 --racqa=0
	check "nvme resv-report -e: Write Exclusive, one registrant with key 0xa holding it" \
		test "$(resv_report rtype) $(resv_report regctl) $(resv_report key0) $(resv_report holds0)" = "1 1 0xa 1"
	check "the holder writes" dd if=/dev/urandom of="$DEV" bs=4k count=4 seek=1000 \
		oflag=direct conv=notrunc status=none
	check "nvme resv-acquire with a wrong key fails" \
		bash -c "! nvme resv-acquire $DEV -n 1 --crkey=0xbad --rtype=1 --racqa=0 2>/dev/null"
	check "nvme resv-release" nvme resv-release "$DEV" -n 1 --crkey=0xa --rtype=1 --rrela=0
	check "released: no reservation" test "$(resv_report rtype)" = 0
	check "nvme resv-acquire again" nvme resv-acquire "$DEV" -n 1 --crkey=0xa --rtype=1 --racqa=0
	check "another host preempts the kernel's reservation" \
		timeout -k 5 60 $resv b-preempt --prkey 0xa
	check "the kernel host's write now fails (Reservation Conflict)" \
		bash -c "! dd if=/dev/urandom of=$DEV bs=4k count=1 seek=1000 oflag=direct conv=notrunc status=none 2>/dev/null"
	check "its reads still work (Write Exclusive)" \
		dd if="$DEV" of=/dev/null bs=4k count=4 iflag=direct status=none
	check "the other host clears the reservation" timeout -k 5 60 $resv b-clear
	check "nvme resv-report: nothing left" test "$(resv_report regctl)" = 0
	check "the kernel host writes again" dd if=/dev/urandom of="$DEV" bs=4k count=1 seek=1000 \
		oflag=direct conv=notrunc status=none
}

# ---- 1. malloc namespace on one gga_tgt -----------------------------------
PORT=$(free_port)
if start_tgt t0 --mem-size 64m; then
	ok "gga_tgt starts"
	T0=$TGT_PID
	rpc t0 bdev_malloc_create --name M0 --num_blocks 65536 --block_size 512 >/dev/null &&
		rpc t0 nvmf_create_transport --trtype tcp >/dev/null &&
		rpc t0 nvmf_create_subsystem --nqn $NQN --serial_number GGAVM0001 \
			--allow_any_host true >/dev/null &&
		rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M0\"}}" \
			>/dev/null &&
		rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": {\"trtype\": \"TCP\", \
\"adrfam\": \"IPv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"$PORT\"}}" >/dev/null
	check "malloc namespace exported on 127.0.0.1:$PORT" test $? -eq 0

	check "nvme discover lists $NQN (tcp, 127.0.0.1:$PORT)" discover_has "$PORT" "$NQN"
	if connect "$PORT" "$NQN"; then
		ok "nvme connect -t tcp attaches $NQN"
		check "namespace size is 32 MiB" test "$(blockdev --getsize64 "$DEV")" = $((32 << 20))
		check "logical block size is 512" test "$(blockdev --getss "$DEV")" = 512
		check "Identify Controller reports the serial number" \
			bash -c "nvme list -o json | grep -q '\"SerialNumber\" *: *\"GGAVM0001\"' ||
				grep -qx GGAVM0001 /sys/class/nvme/*/serial"
		check "O_DIRECT writes of random data at 0, 7, 19 and 31 MiB" \
			write_patterns "$DEV" m0 0 7 19 31
		check "reading them back gives the same sha256" verify_patterns "$DEV" m0
		resv_tests
		dmesg_lines=$(dmesg | wc -l)
		start=$(date +%s)
		check "nvme disconnect" disconnect "$NQN"
		CONNECTED=()
		# The kernel host writes CC.SHN and waits (up to its shutdown timeout) for SHST.
		check "disconnect took $(($(date +%s) - start)) s (want < 5: no shutdown timeout)" \
			test $(($(date +%s) - start)) -lt 5
		check "the target saw the shutdown notification and completed it" \
			bash -c "grep -q 'normal shutdown notification' $TMP/t0.log &&
				grep -q 'of host $HOSTNQN: shutdown complete' $TMP/t0.log"
		check "the kernel logged no shutdown trouble" \
			bash -c "! dmesg | tail -n +$((dmesg_lines + 1)) | grep -iE 'shutdown (timeout|incomplete)|failed to (shut|write)'"
		if connect "$PORT" "$NQN"; then
			ok "reconnect"
			check "the data is still there after a reconnect" verify_patterns "$DEV" m0
			check "nvme disconnect again" disconnect "$NQN"
			CONNECTED=()
		else
			not_ok "reconnect"
		fi
	else
		not_ok "nvme connect -t tcp attaches $NQN"
	fi
	check "gga_tgt is still alive and answers RPCs" \
		bash -c "kill -0 $T0 && $BIN/gga_rpc -s $TMP/t0.sock nvmf_get_subsystems >/dev/null"
	stop_tgt "$T0"
	check "gga_tgt shuts down cleanly (exit 0)" test $? -eq 0
else
	not_ok "gga_tgt starts"
fi

# ---- 2. gga bdev over three half-block targets ----------------------------
if bash "$GGA_ROOT/scripts/gga_topology.sh" up "$TOPO" --size 16 >"$TMP/topo-up.log" 2>&1; then
	ok "gga_topology.sh up (three half-block targets + front)"
	FPORT=$(sed -n 's/^base_port=//p' "$TOPO/topology.env")
	check "nvme discover lists $TOPO_NQN (tcp, 127.0.0.1:$FPORT)" discover_has "$FPORT" "$TOPO_NQN"
	if connect "$FPORT" "$TOPO_NQN"; then
		ok "nvme connect -t tcp attaches the gga bdev"
		size=$(blockdev --getsize64 "$DEV")
		check "gga namespace size is 16 MiB (got $size)" test "$size" = $((16 << 20))
		check "O_DIRECT writes of random data at 0, 5, 11 and 15 MiB" \
			write_patterns "$DEV" gga 0 5 11 15
		check "reading them back gives the same sha256" verify_patterns "$DEV" gga
		check "nvme disconnect" disconnect "$TOPO_NQN"
		CONNECTED=()
		if connect "$FPORT" "$TOPO_NQN"; then
			check "the gga data is still there after a reconnect" verify_patterns "$DEV" gga
			check "nvme disconnect again" disconnect "$TOPO_NQN"
			CONNECTED=()
		else
			not_ok "reconnect to the gga bdev"
		fi
	else
		not_ok "nvme connect -t tcp attaches the gga bdev"
	fi
	check "all four daemons are still running" bash "$GGA_ROOT/scripts/gga_topology.sh" status "$TOPO"
	check "gga_topology.sh down" bash "$GGA_ROOT/scripts/gga_topology.sh" down "$TOPO"
	for n in front hb0 hb1 hb2; do
		# The daemon's exit status lands in NAME.rc just after it exits.
		check "$n exited with status 0" vm_retry 5 grep -qx 0 "$TOPO/$n.rc"
	done
	rm -f "$TOPO/topology.env"
else
	not_ok "gga_topology.sh up"
	cat "$TMP/topo-up.log"
fi

finish
