#!/usr/bin/env bash
# gga_tgt with SPDK's hosts (outside `make test`: CI has no SPDK).
#   scripts/interop_spdk.sh [--spdk DIR] [BUILD]
# SPDK is built by hand as DEVELOPERS.md says (test/nvme/reserve needs
# `make -C test/nvme/reserve` after the main build); it needs hugepages
# (nr_hugepages >= 1024, hugetlbfs on /dev/hugepages: set up here when run as
# root). Everything listens on 127.0.0.1.
#  1. SPDK's reservation tool (test/nvme/reserve: Get Features Host
#     Identifier, Register, Acquire, Release, Unregister, Report) against a
#     gga_tgt namespace.
#  2. SPDK's bdevperf as a multipath host, `multipath` then `failover`: two
#     paths to one gga_tgt namespace, verify while (multipath: A optimized,
#     B inaccessible) A turns inaccessible and B optimized, then A's listener
#     is removed and added back (failover: A's listener only; SPDK's failover
#     mode follows lost paths, not ANA states). Pass: bdevperf exits 0.
#  3. gga's bdevperf as the multipath host of SPDK's nvmf_tgt with ANA: the
#     same ANA failover and lost path, every block verified.
#  4. SPDK's bdevperf as the host of gga's two fronts (scripts/gga_topology.sh
#     --fronts 2), `multipath` then `failover`: verify while the active front
#     is SIGKILLed and the standby takes over. Pass: bdevperf exits 0 (no
#     failed I/O, no mismatch); the longest I/O is printed.
# Prints `ok - ...` / `not ok - ...` per check; exits non-zero if any failed.
set -u
spdk=${SPDK_DIR:-}
bin=build/bin
while [ $# -gt 0 ]; do
	case "$1" in
	--spdk) spdk=$2; shift ;;
	*) bin=$1/bin ;;
	esac
	shift
done
[ -n "$spdk" ] && [ -x "$spdk/build/examples/bdevperf" ] || {
	echo "interop_spdk: no SPDK build (--spdk DIR or SPDK_DIR with build/examples/bdevperf)" >&2
	exit 2
}
if [ "$(cat /proc/sys/vm/nr_hugepages)" -lt 1024 ] && [ "$(id -u)" = 0 ]; then
	echo 1024 >/proc/sys/vm/nr_hugepages
fi
if ! mount | grep -q ' /dev/hugepages type hugetlbfs' && [ "$(id -u)" = 0 ]; then
	mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages
fi
[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1024 ] && mount | grep -q ' /dev/hugepages type hugetlbfs' || {
	echo "interop_spdk: SPDK needs nr_hugepages >= 1024 and hugetlbfs on /dev/hugepages" >&2
	exit 2
}

tmp=$(mktemp -d /tmp/gga-interop.XXXXXX)
pids=()
fails=0
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
check() {
	local desc=$1
	shift
	if "$@"; then echo "ok - $desc"; else echo "not ok - $desc"; fails=$((fails + 1)); fi
}
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
rpc() { "$bin/gga_rpc" -s "$tmp/t.sock" "$@"; }
addr() {
	printf '{"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1", "trsvcid": "%s"}' "$1"
}
NQN=nqn.2016-06.io.gga:interop
PA=$(free_port)
PB=$(free_port)

"$bin/gga_tgt" -m 0x2 -r "$tmp/t.sock" >"$tmp/t.log" 2>&1 &
pids+=($!)
for i in $(seq 1 100); do grep -q ': ready' "$tmp/t.log" && break; sleep 0.1; done
rpc bdev_malloc_create --name M0 --num_blocks 32768 --block_size 512 >/dev/null
rpc nvmf_create_transport --trtype TCP >/dev/null
rpc nvmf_create_subsystem --nqn $NQN --allow_any_host true --ana_reporting true \
	--max_namespaces 2 >/dev/null
rpc nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M0\"}}" >/dev/null
rpc nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA")}" >/dev/null
rpc nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PB"), \"ana_state\": \"inaccessible\"}" >/dev/null

# 1. SPDK's reservation tool.
if [ -x "$spdk/test/nvme/reserve/reserve" ]; then
	timeout -k 5 60 "$spdk/test/nvme/reserve/reserve" \
		-r "trtype:tcp adrfam:IPv4 traddr:127.0.0.1 trsvcid:$PA subnqn:$NQN" >"$tmp/reserve.out" 2>&1
	rc=$?
	sed 's/^/  | /' "$tmp/reserve.out" | grep -v "EAL\|TELEMETRY" | head -40
	check "SPDK's reserve against gga_tgt: exit 0" test $rc -eq 0
	check "it used the 128-bit Host Identifier and saw Reservations Supported" \
		bash -c "grep -q 'Reservations: *Supported' $tmp/reserve.out && grep -q '128-bit extended host identifier' $tmp/reserve.out"
else
	echo "skip: $spdk/test/nvme/reserve/reserve is not built (make -C test/nvme/reserve)"
fi

# 2. SPDK's bdevperf, two paths, while the paths change.
ana() { # PORT STATE
	rpc nvmf_subsystem_listener_set_ana_state --nqn $NQN --ana_state "$2" \
		--listen_address "$(addr "$1")" >/dev/null
}
for mode in multipath failover; do
	cat >"$tmp/bp.json" <<JSON
{"subsystems": [{"subsystem": "bdev", "config": [
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$PA", "subnqn": "$NQN", "multipath": "$mode"}},
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$PB", "subnqn": "$NQN", "multipath": "$mode"}}
]}]}
JSON
	ana "$PA" optimized
	# SPDK's failover mode keeps one path and moves only when it is lost (ANA
	# states do not move it): there the second path waits non-optimized.
	ana "$PB" "$([ $mode = multipath ] && echo inaccessible || echo non_optimized)"
	timeout -k 5 90 "$spdk/build/examples/bdevperf" -m 0x1 --json "$tmp/bp.json" -q 16 -o 4096 \
		-w verify -t 14 >"$tmp/bp.$mode.out" 2>&1 &
	bp=$!
	pids+=($bp)
	sleep 4
	if [ $mode = multipath ]; then
		ana "$PA" inaccessible
		sleep 0.5
		ana "$PB" optimized
	fi
	sleep 3
	rpc nvmf_subsystem_remove_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA")}" >/dev/null
	sleep 2
	rpc nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA"), \"ana_state\": \"non_optimized\"}" >/dev/null
	wait $bp
	rc=$?
	grep -E "Latency|N0n1|Total|error|fail" "$tmp/bp.$mode.out" | grep -v "EAL" | head -12 | sed 's/^/  | /'
	check "SPDK bdevperf ($mode) over two gga_tgt paths$([ $mode = multipath ] && echo " through an ANA failover and" || echo " through") a lost path: exit 0" \
		test $rc -eq 0
done
kill -TERM "${pids[0]}"
wait "${pids[0]}"
check "gga_tgt exits 0" test $? -eq 0
pids=()

# 3. gga's bdevperf as the multipath host of SPDK's nvmf_tgt (its ANA log, its path errors).
if [ -x "$spdk/build/bin/nvmf_tgt" ]; then
	srpc() { python3 "$spdk/scripts/rpc.py" -s "$tmp/spdk.sock" "$@" >/dev/null; }
	SNQN=nqn.2016-06.io.spdk:interop
	"$spdk/build/bin/nvmf_tgt" -m 0x1 -r "$tmp/spdk.sock" >"$tmp/spdk.log" 2>&1 &
	pids+=($!)
	for i in $(seq 1 100); do [ -S "$tmp/spdk.sock" ] && break; sleep 0.1; done
	srpc bdev_malloc_create -b M0 64 512
	srpc nvmf_create_transport -t TCP
	srpc nvmf_create_subsystem $SNQN -a -r
	srpc nvmf_subsystem_add_ns $SNQN M0
	srpc nvmf_subsystem_add_listener $SNQN -t tcp -a 127.0.0.1 -s "$PA" -f ipv4
	srpc nvmf_subsystem_add_listener $SNQN -t tcp -a 127.0.0.1 -s "$PB" -f ipv4
	srpc nvmf_subsystem_listener_set_ana_state $SNQN -n inaccessible -t tcp -a 127.0.0.1 -s "$PB" -f ipv4
	cat >"$tmp/gbp.json" <<JSON
{"subsystems": [{"subsystem": "bdev", "config": [
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$PA", "subnqn": "$SNQN"}},
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$PB", "subnqn": "$SNQN"}}
]}]}
JSON
	timeout -k 5 60 "$bin/bdevperf" -m 0x2 --json "$tmp/gbp.json" -q 16 -o 4096 -w verify -t 12 \
		-b N0n1 >"$tmp/gbp.out" 2>&1 &
	bp=$!
	pids+=($bp)
	sleep 4
	srpc nvmf_subsystem_listener_set_ana_state $SNQN -n inaccessible -t tcp -a 127.0.0.1 -s "$PA" -f ipv4
	sleep 0.5
	srpc nvmf_subsystem_listener_set_ana_state $SNQN -n optimized -t tcp -a 127.0.0.1 -s "$PB" -f ipv4
	sleep 3
	srpc nvmf_subsystem_remove_listener $SNQN -t tcp -a 127.0.0.1 -s "$PA" -f ipv4
	wait $bp
	rc=$?
	grep -E "verify:|error|lost" "$tmp/gbp.out" | head -6 | sed 's/^/  | /'
	check "gga's bdevperf over two paths of SPDK's nvmf_tgt through an ANA failover and a lost path: exit 0" \
		test $rc -eq 0
	check "and every block it read back was verified" \
		grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$tmp/gbp.out"
fi
# 4. SPDK's bdevperf across a front failover.
for mode in multipath failover; do
	topo=$tmp/topo.$mode
	GGA_BUILD=$(dirname "$bin") bash scripts/gga_topology.sh up "$topo" --fronts 2 --size 16 \
		>"$tmp/topo.$mode.out" 2>&1 || {
		cat "$tmp/topo.$mode.out"
		check "topology with two fronts up" false
		continue
	}
	# shellcheck disable=SC1090
	source "$topo/topology.env"
	# SPDK retries an I/O whose path failed without limit (bdev_retry_count -1), as a
	# host that must ride out the takeover does.
	cat >"$tmp/bpf.json" <<JSON
{"subsystems": [{"subsystem": "bdev", "config": [
 {"method": "bdev_nvme_set_options", "params": {"bdev_retry_count": -1}},
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$base_port", "subnqn": "nqn.2016-06.io.gga:gga0", "multipath": "$mode"}},
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$((base_port + k + m + 1))", "subnqn": "nqn.2016-06.io.gga:gga0", "multipath": "$mode"}}
]}]}
JSON
	timeout -k 5 90 "$spdk/build/examples/bdevperf" -m 0x1 --disable-cpumask-locks --json "$tmp/bpf.json" -q 16 -o 4096 \
		-w verify -t 12 >"$tmp/bpf.$mode.out" 2>&1 &
	bp=$!
	pids+=($bp)
	sleep 4
	bash scripts/gga_topology.sh kill-target "$topo" front >/dev/null 2>&1
	wait $bp
	rc=$?
	grep -E "Latency|N0n1|Total|error|fail" "$tmp/bpf.$mode.out" | grep -v "EAL" | head -12 | sed 's/^/  | /'
	check "SPDK bdevperf ($mode) across a SIGKILL of the active front: exit 0 (rc $rc)" test $rc -eq 0
	[ $rc -eq 0 ] || tail -n 30 "$tmp/bpf.$mode.out" "$tmp/topo.$mode.out" | cut -c1-200
	bash scripts/gga_topology.sh down "$topo" >/dev/null 2>&1
done

echo "interop_spdk: $fails failed"
[ $fails -eq 0 ]
