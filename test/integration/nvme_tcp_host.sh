#!/usr/bin/env bash
# The NVMe/TCP host (initiator library + bdev_nvme) against gga_tgt on
# 127.0.0.1: bdevperf verify/randread/randwrite and metadata verify with
# digests on; a target killed mid-run fails bdevperf cleanly and in bounded
# time; a front gga_tgt with an attached controller keeps reconnecting while
# its target is down and serves again once it is back; attach errors (wrong
# port, unknown NQN, rdma) leave nothing behind; save_config writes one
# attach per controller; detach removes the bdevs.
source "$(dirname "$0")/common.sh"

BP=$BIN/bdevperf
NQN=nqn.2016-06.io.gga:back
FNQN=nqn.2016-06.io.gga:front

# setup_back SOCKNAME PORT: a malloc namespace and one with 64-byte metadata, exported on PORT.
setup_back() {
	local s=$1 port=$2
	rpc "$s" bdev_malloc_create '{"name":"M0","num_blocks":65536,"block_size":512}' >/dev/null &&
		rpc "$s" bdev_malloc_create \
			'{"name":"M1","num_blocks":16384,"block_size":512,"md_size":64}' >/dev/null &&
		rpc "$s" nvmf_create_transport '{"trtype":"TCP"}' >/dev/null &&
		rpc "$s" nvmf_create_subsystem "{\"nqn\":\"$NQN\",\"allow_any_host\":true}" >/dev/null &&
		rpc "$s" nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" \
			>/dev/null &&
		rpc "$s" nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M1\"}}" \
			>/dev/null &&
		rpc "$s" nvmf_subsystem_add_listener "{\"nqn\":\"$NQN\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$port\"}}" \
			>/dev/null
}

# attach_params NAME PORT SUBNQN [extra JSON members]
attach_params() {
	printf '{"name":"%s","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s","subnqn":"%s"%s}' \
		"$1" "$2" "$3" "${4:+,$4}"
}

# bp NAME CONFIG ARGS...: bdevperf bounded in time, output in $TMP/NAME.out.
bp() {
	local name=$1 cfg=$2
	shift 2
	timeout -k 5 60 "$BP" --json "$cfg" "$@" >"$TMP/$name.out" 2>&1
}

# state_of SOCKNAME CTRLR: the controller's state as bdev_nvme_get_controllers shows it.
state_of() {
	rpc "$1" bdev_nvme_get_controllers "{\"name\":\"$2\"}" 2>/dev/null | jget - 'd[0]["state"]'
}

# wait_state SOCKNAME CTRLR STATE SECONDS
wait_state() {
	local i
	for i in $(seq 1 $(($4 * 10))); do
		[ "$(state_of "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

BPORT=$(free_port)
start_tgt back || exit 1
BPID=$TGT_PID
setup_back back "$BPORT" || {
	not_ok "target setup (nvmf RPCs)"
	finish
}

# --- bdevperf over NVMe/TCP, digests on ---
write_config "$TMP/bp.json" \
	"{\"method\":\"bdev_nvme_attach_controller\",\"params\":$(attach_params N0 "$BPORT" "$NQN" '"hdgst":true,"ddgst":true')}"

bp verify "$TMP/bp.json" -q 16 -o 4096 -w verify -b N0n1 -t 2
check "verify over NVMe/TCP with digests: exit 0" test $? -eq 0
check "verify: no mismatches" grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$TMP/verify.out"
bp mdverify "$TMP/bp.json" -q 16 -o 4096 -w verify -b N0n2 -t 2
check "verify on the namespace with 64-byte metadata: exit 0" test $? -eq 0
check "md verify: no mismatches" grep -q '0 mismatches' "$TMP/mdverify.out"
bp bigverify "$TMP/bp.json" -q 8 -o 131072 -w verify -t 1
check "verify with 128 KiB I/O (R2T/H2CData) on both namespaces: exit 0" test $? -eq 0
bp randread "$TMP/bp.json" -q 32 -o 4096 -w randread -t 1
check "randread: exit 0" test $? -eq 0
bp randwrite "$TMP/bp.json" -q 32 -o 4096 -w randwrite -t 1
check "randwrite: exit 0" test $? -eq 0
check "randwrite IOPS > 0" \
	awk '/^Total/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { exit !($i > 0) } }' \
	"$TMP/randwrite.out"
bp twocores "$TMP/bp.json" -m 0x3 -C -q 16 -o 16384 -w verify -b N0n1 -t 1
check "verify from two cores (one I/O queue each): exit 0" test $? -eq 0

# --- the front: a gga_tgt whose bdevs are the remote namespaces ---
FPORT=$(free_port)
start_tgt front || exit 1
FPID=$TGT_PID
rpc front bdev_nvme_attach_controller "$(attach_params B "$BPORT" "$NQN" '"hdgst":true')" \
	>"$TMP/attach.out" 2>&1
check "attach_controller answers the bdev names" \
	test "$(jget "$TMP/attach.out" 'd == ["Bn1", "Bn2"]')" = true
rpc front bdev_get_bdevs '{"name":"Bn2"}' >"$TMP/bn2.json"
check "Bn2: 512-byte blocks with 64 bytes of metadata, 16384 blocks" \
	test "$(jget "$TMP/bn2.json" 'd[0]["block_size"] == 512 and d[0]["md_size"] == 64 and d[0]["num_blocks"] == 16384')" = true
# The namespace's NGUID is the target bdev's UUID, and the host's bdev takes it as its own.
M1_UUID=$(rpc back bdev_get_bdevs '{"name":"M1"}' | jget - 'd[0]["uuid"]')
check "Bn2 has M1's uuid ($M1_UUID) through the namespace's NGUID" \
	test "${#M1_UUID}" -eq 36 -a "$(jget "$TMP/bn2.json" 'd[0]["uuid"]')" = "$M1_UUID"
check "get_controllers: connected" test "$(state_of front B)" = connected

rpc front nvmf_create_transport '{"trtype":"TCP"}' >/dev/null &&
	rpc front nvmf_create_subsystem "{\"nqn\":\"$FNQN\",\"allow_any_host\":true}" >/dev/null &&
	rpc front nvmf_subsystem_add_ns "{\"nqn\":\"$FNQN\",\"namespace\":{\"bdev_name\":\"Bn1\"}}" \
		>/dev/null &&
	rpc front nvmf_subsystem_add_listener "{\"nqn\":\"$FNQN\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$FPORT\"}}" \
		>/dev/null
check "front exports Bn1" test $? -eq 0
write_config "$TMP/front.json" \
	"{\"method\":\"bdev_nvme_attach_controller\",\"params\":$(attach_params F "$FPORT" "$FNQN")}"
bp front1 "$TMP/front.json" -q 16 -o 4096 -w verify -t 1
check "verify through the front: exit 0" test $? -eq 0

# --- target killed mid-run: bdevperf fails cleanly, in bounded time ---
bp killed "$TMP/bp.json" -q 16 -o 4096 -w randwrite -t 5 &
BPP=$!
sleep 1.5
kill -KILL "$BPID"
wait "$BPID" 2>/dev/null
start=$(date +%s)
wait "$BPP"
rc=$?
secs=$(($(date +%s) - start))
check "target killed: bdevperf exits non-zero on its own (rc $rc)" \
	test $rc -ne 0 -a $rc -ne 124 -a $rc -ne 137
check "target killed: bdevperf finished in bounded time (${secs} s after the kill)" test "$secs" -le 15
check "target killed: failed I/O reported" grep -q 'failed' "$TMP/killed.out"

# --- the front keeps reconnecting while the target is down ---
check "front controller state: reconnecting" wait_state front B reconnecting 5
bp front_down "$TMP/front.json" -q 16 -o 4096 -w verify -t 1
rc=$?
check "I/O through the front while its target is down fails (rc $rc), not hangs" \
	test $rc -ne 0 -a $rc -ne 124 -a $rc -ne 137
sleep 2
check "front still reconnecting after 3 s" test "$(state_of front B)" = reconnecting
n=$(grep -c 'reconnect attempt' "$TMP/front.log")
check "reconnect logging is bounded ($n lines)" test "$n" -le 6

# --- the target comes back: the front serves again ---
rm -f "$TMP/back.sock"
start_tgt back || exit 1
BPID=$TGT_PID
setup_back back "$BPORT"
check "target restarted on the same port" test $? -eq 0
check "front controller reconnected" wait_state front B connected 10
rpc front bdev_nvme_get_controllers '{"name":"B"}' >"$TMP/ctrlrs.json"
check "get_controllers counts the reconnect" \
	test "$(jget "$TMP/ctrlrs.json" 'd[0]["reconnects"] >= 1 and d[0]["cntlid"] > 0')" = true
bp front2 "$TMP/front.json" -q 16 -o 4096 -w verify -t 1
check "verify through the front after the restart: exit 0" test $? -eq 0

# --- attach errors leave nothing behind ---
NOPORT=$(free_port)
rpc front bdev_nvme_attach_controller "$(attach_params X "$NOPORT" "$NQN")" >"$TMP/e1.out" 2>&1
check_fails "attach to a port nobody listens on fails" test $? -eq 0
check "the error names the address" grep -q "127.0.0.1:$NOPORT" "$TMP/e1.out"
check "the error says why (refused)" grep -qi 'refused' "$TMP/e1.out"
rpc front bdev_nvme_attach_controller "$(attach_params X "$BPORT" nqn.2016-06.io.gga:nope)" \
	>"$TMP/e2.out" 2>&1
check_fails "attach to an unknown NQN fails" test $? -eq 0
check "the error carries the Connect status" grep -q 'Connect Invalid Parameters' "$TMP/e2.out"
rpc front bdev_nvme_attach_controller '{"name":"X","trtype":"RDMA","traddr":"127.0.0.1","trsvcid":"4420","subnqn":"nqn.x"}' \
	>"$TMP/e3.out" 2>&1
check "trtype rdma: a clear error" grep -q 'RDMA' "$TMP/e3.out"
rpc front bdev_get_bdevs >"$TMP/bdevs.json"
check "no bdev was created by the failed attaches" \
	test "$(jget "$TMP/bdevs.json" 'sorted(b["name"] for b in d) == ["Bn1", "Bn2"]')" = true
check_fails "no controller X exists" rpc front bdev_nvme_get_controllers '{"name":"X"}'
rpc front bdev_nvme_attach_controller "$(attach_params B "$BPORT" "$NQN")" >/dev/null 2>&1
check_fails "a second controller named B is refused" test $? -eq 0

# --- save_config: one attach per controller ---
rpc front save_config >"$TMP/saved.json"
check "save_config: exactly one bdev_nvme_attach_controller, for B" \
	test "$(jget "$TMP/saved.json" '[c["params"]["name"] for s in d["subsystems"] if s["subsystem"] == "bdev" for c in s["config"] if c["method"] == "bdev_nvme_attach_controller"] == ["B"]')" = true

# --- detach ---
rpc front bdev_nvme_attach_controller "$(attach_params C "$BPORT" "$NQN" '"ddgst":true')" >/dev/null
check "a second controller C attaches" test $? -eq 0
rpc front bdev_nvme_detach_controller '{"name":"C"}' >/dev/null
check "detach C" test $? -eq 0
rpc front bdev_get_bdevs >"$TMP/bdevs2.json"
check "Cn1 and Cn2 are gone" \
	test "$(jget "$TMP/bdevs2.json" 'sorted(b["name"] for b in d) == ["Bn1", "Bn2"]')" = true
check_fails "controller C is gone" rpc front bdev_nvme_get_controllers '{"name":"C"}'
rpc front bdev_nvme_detach_controller '{"name":"B"}' >/dev/null
check "detach B, even while the front exports Bn1" test $? -eq 0
rpc front bdev_get_bdevs >"$TMP/bdevs3.json"
check "no bdev left on the front" test "$(jget "$TMP/bdevs3.json" 'len(d)')" = 0

stop_tgt "$FPID"
check "front shuts down cleanly" test $? -eq 0
stop_tgt "$BPID"
check "target shuts down cleanly" test $? -eq 0
finish
