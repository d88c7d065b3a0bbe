#!/usr/bin/env bash
# Admission before allocation (issue 33): connections that never finish their
# handshake must not lock hosts out of gga_tgt.
#  - 1,000 silent sockets on a plaintext listener and 100 stalled TLS
#    handshakes (50 silent, 50 with half a ClientHello) on a secure_channel
#    listener, all held open, with handshake_timeout_ms and pdu_timeout_ms at
#    60 s (so only admission can let a newcomer in): a queue opened before
#    the flood keeps working, a new host (the Python client) connects and
#    does I/O, gga's host (bdevperf verify) and a TLS host (OpenSSL s_client)
#    connect; the dropped connections are counted, not logged one by one.
#  - handshake_timeout_ms (500 ms on a second target): a silent socket, one
#    byte of an ICReq and half a ClientHello are closed after it.
source "$(dirname "$0")/common.sh"

command -v openssl >/dev/null || skip "openssl (the command) is needed for s_client"
# The flood holds 1,100 sockets here and (before the fix) up to as many in gga_tgt.
ulimit -n 4096 2>/dev/null || true
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 1500 ] ||
	skip "needs 1500 file descriptors; ulimit -n is $(ulimit -n) (hard $(ulimit -Hn))"

CLIENT=$GGA_ROOT/test/integration/nvme_tcp_client.py
PEER=$GGA_ROOT/test/integration/nvme_tls_peer.py
NQN=nqn.2016-06.io.gga:admission
HOST=nqn.2014-08.org.nvmexpress:uuid:6a1b2c3d-4e5f-4061-8273-9a8b7c6d5e4f
TLSHOST=nqn.2014-08.org.nvmexpress:uuid:7b2c3d4e-5f60-4172-8384-ab9c8d7e6f50
source "$(dirname "$0")/keys_lib.sh"
KEY_NAMES="k1"
python3 "$PEER" gen-key --hash 1 >"$KEYS/k1" && chmod 600 "$KEYS/k1"

listener() {
	printf '{"nqn":"%s","listen_address":{"trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s"}%s}' \
		"$NQN" "$1" "${2:+,$2}"
}
# setup SERVER TRANSPORT PORT TLS_PORT: namespace 1 for the Python host, 2 for bdevperf.
setup() {
	add_keys "$1" &&
		rpc "$1" bdev_malloc_create '{"name":"M0","num_blocks":16384,"block_size":512}' &&
		rpc "$1" bdev_malloc_create '{"name":"M1","num_blocks":16384,"block_size":512}' &&
		rpc "$1" nvmf_create_transport "$2" &&
		rpc "$1" nvmf_create_subsystem "{\"nqn\":\"$NQN\"}" &&
		rpc "$1" nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" &&
		rpc "$1" nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M1\"}}" &&
		rpc "$1" nvmf_subsystem_add_listener "$(listener "$3")" &&
		rpc "$1" nvmf_subsystem_add_listener "$(listener "$4" '"secure_channel":true')" &&
		rpc "$1" nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"$HOST\"}" &&
		rpc "$1" nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"$TLSHOST\",\"psk\":\"k1\"}"
}

PORT=$(free_port)
TLS_PORT=$(free_port)
start_tgt a -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
A_PID=$TGT_PID
check "target with a plaintext and a TLS listener, handshake and PDU timeouts of 60 s" \
	setup a '{"trtype":"TCP","handshake_timeout_ms":60000,"pdu_timeout_ms":60000}' \
	"$PORT" "$TLS_PORT" >/dev/null
check "nvmf_get_transports shows max_pending_connections and handshake_timeout_ms" \
	test "$(rpc a nvmf_get_transports | jget - '[d[0][k] for k in ("max_pending_connections","handshake_timeout_ms")]')" = "[128, 60000]"

release=$TMP/release
timeout -k 5 90 python3 "$CLIENT" --port "$PORT" --tls-port "$TLS_PORT" --nqn "$NQN" \
	--hostnqn "$HOST" --count 1000 --tls-count 100 --release "$release" --seconds 60 \
	flood >"$TMP/flood.out" 2>&1 &
FLOOD_PID=$!
PIDS+=("$FLOOD_PID")
for _ in $(seq 1 300); do
	grep -q '^holding' "$TMP/flood.out" && break
	kill -0 "$FLOOD_PID" 2>/dev/null || break
	sleep 0.1
done
# held: the flood process still holds its 1,100 connections (the checks below are under it).
held() {
	grep -q '^holding 1100 stalled connections' "$TMP/flood.out" && kill -0 "$FLOOD_PID" 2>/dev/null
}
check "under 1,000 idle sockets and 100 stalled TLS handshakes, a new host connects and does I/O" \
	held
write_config "$TMP/bp.json" \
	"{\"method\":\"bdev_nvme_attach_controller\",\"params\":{\"name\":\"N0\",\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$PORT\",\"subnqn\":\"$NQN\",\"hostnqn\":\"$HOST\"}}"
timeout -k 5 30 "$BIN/bdevperf" --json "$TMP/bp.json" -w verify -b N0n2 -q 8 -o 4096 -t 1 \
	>"$TMP/bp.out" 2>&1
bp_held() {
	verified "$TMP/bp.out" && held
}
check "gga's host connects during the flood (bdevperf verify, 0 mismatches)" bp_held
out=$(timeout -k 5 30 python3 "$PEER" connect --port "$TLS_PORT" --key "$(cat "$KEYS/k1")" \
	--hostnqn "$TLSHOST" --subnqn "$NQN" 2>&1)
tls_held() {
	grep -q '^connected' <<<"$out" && held
}
check "a TLS host connects during the flood ($out)" tls_held
touch "$release"
wait "$FLOOD_PID"
rc=$?
cat "$TMP/flood.out"
check "the queue opened before the flood saw no error (exit $rc)" test $rc -eq 0
rpc a nvmf_get_stats >"$TMP/stats.json"
dropped=$(jget "$TMP/stats.json" 'sum(t.get("pending_dropped", 0) for g in d["poll_groups"] for t in g["transports"])')
check "the stalled connections were pushed out by newer ones and counted ($dropped)" \
	test "${dropped:-0}" -ge 800
lines=$(grep -c 'connections that had not finished their handshake' "$TMP/a.log")
check "the drops are logged as counts ($lines lines), no error per connection" \
	test "$lines" -ge 1 -a "$lines" -le 20 -a "$(grep -c 'ERROR' "$TMP/a.log")" = 0
stop_tgt "$A_PID"
rc=$?
check "SIGTERM ends the daemon with exit 0 (exit $rc)" test $rc -eq 0

PORT=$(free_port)
TLS_PORT=$(free_port)
start_tgt b -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
B_PID=$TGT_PID
check "target with handshake_timeout_ms 500 and pdu_timeout_ms 60 s" \
	setup b '{"trtype":"TCP","handshake_timeout_ms":500,"pdu_timeout_ms":60000}' \
	"$PORT" "$TLS_PORT" >/dev/null
check "a silent socket, one byte of an ICReq, half a ClientHello: closed after 0.5 s" \
	timeout -k 5 60 python3 "$CLIENT" --port "$PORT" --tls-port "$TLS_PORT" --nqn "$NQN" \
	--hostnqn "$HOST" --seconds 0.5 handshake-deadline
rpc b nvmf_get_stats >"$TMP/stats.json"
check "nvmf_get_stats counts the 3 handshake timeouts" \
	test "$(jget "$TMP/stats.json" 'sum(t.get("handshake_timeouts", 0) for g in d["poll_groups"] for t in g["transports"])')" = 3
stop_tgt "$B_PID"
rc=$?
check "SIGTERM ends the daemon with exit 0 (exit $rc)" test $rc -eq 0
finish
