#!/usr/bin/env bash
# Limits a peer cannot exceed (issue 10, part 4), set with nvmf_create_transport:
# max_connections_per_listener, handshake_timeout_ms (ICReq) and
# pdu_timeout_ms (Connect, each PDU; slowloris), max_kato_ms (a host's KATO of 0 or above it is capped), next to
# SPDK's max_queue_depth, in_capsule_data_size and max_io_size. A real host
# still works under tight limits; the daemon stays idle and exits 0.
source "$(dirname "$0")/common.sh"

CLIENT=$GGA_ROOT/test/integration/nvme_tcp_client.py
NQN=nqn.2016-06.io.gga:limits
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:0b9f8a3c-1d2e-4f50-8a6b-7c8d9e0f1a2b
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
hz=$(getconf CLK_TCK)

client() {
	local sc=$1
	shift
	timeout -k 5 60 python3 "$CLIENT" --port "$PORT" --nqn "$NQN" --hostnqn "$HOSTNQN" \
		--rpc "$BIN/gga_rpc -s $TMP/l0.sock" "$@" "$sc"
}

start_tgt l0 -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
transport='{"trtype":"TCP","max_connections_per_listener":4,"pdu_timeout_ms":1500,"max_kato_ms":3000,"handshake_timeout_ms":1500,"max_queue_depth":128,"in_capsule_data_size":4096,"max_io_size":65536}'
check_fails "pdu_timeout_ms below 100 ms is refused" \
	rpc l0 nvmf_create_transport '{"trtype":"TCP","pdu_timeout_ms":10}'
check_fails "max_connections_per_listener 0 is refused" \
	rpc l0 nvmf_create_transport '{"trtype":"TCP","max_connections_per_listener":0}'
check "a refused nvmf_create_transport creates nothing" \
	test "$(rpc l0 nvmf_get_transports | jget - 'len(d)')" = 0
rpc l0 bdev_malloc_create '{"name":"M0","num_blocks":16384,"block_size":512}' >/dev/null &&
	rpc l0 nvmf_create_transport "$transport" >/dev/null &&
	rpc l0 nvmf_create_subsystem "{\"nqn\":\"$NQN\",\"allow_any_host\":true}" >/dev/null &&
	rpc l0 nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" >/dev/null &&
	rpc l0 nvmf_subsystem_add_listener "{\"nqn\":\"$NQN\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$PORT\"}}" >/dev/null
check "target with limits (4 connections, handshake and PDU timeouts 1.5 s, KATO cap 3 s)" test $? -eq 0
check "nvmf_get_transports shows the limits" test "$(rpc l0 nvmf_get_transports |
	jget - '[d[0][k] for k in ("max_connections_per_listener","pdu_timeout_ms","max_kato_ms")]')" = "[4, 1500, 3000]"

check "4 connections are served, a 5th is closed unanswered, one more once one closed" \
	client conn-limit --count 4
check "the refusal is logged once" test "$(grep -c "connections (max_connections_per_listener)" "$TMP/l0.log")" = 1
check "no ICReq, no Connect, half a PDU, a PDU dribbled a byte per 100 ms: each closed after 1.5 s" \
	client slowloris --seconds 1.5
check "the closes are logged with their reason" \
	grep -q 'a PDU begun and not finished within 1500 ms' "$TMP/l0.log"
check "a KATO of 0 or 30 s gets the 3 s cap (Get Features), and silence ends the controller" \
	client kato-cap --seconds 3
check "PDUs sent in 3-byte pieces still work" client partial

tcp_verify "$TMP/bp.out" "$PORT" "$NQN" -q 32 -o 65536 -t 2
rc=$?
check "a real host (bdevperf verify, QD 32 x 64 KiB, max_io_size) exits 0 (exit $rc)" test $rc -eq 0
check "bdevperf verify: 0 mismatches" verified "$TMP/bp.out"

rpc l0 save_config >"$TMP/saved.json"
check "save_config keeps the limits" test "$(jget "$TMP/saved.json" '[p["params"].get("pdu_timeout_ms") for s in d["subsystems"] for p in s.get("config") or [] if p["method"] == "nvmf_create_transport"]')" = "[1500]"

sleep 0.5
t0=$(proc_cpu_ticks "$TGT_PID")
sleep 2
t1=$(proc_cpu_ticks "$TGT_PID")
ticks=$((t1 - t0))
check "idle with the timeout checks running (used $ticks ticks in 2 s, want <= 10)" test $ticks -le 10
stop_tgt "$TGT_PID"
rc=$?
check "SIGTERM ends the daemon with exit 0 (exit $rc)" test $rc -eq 0
finish
