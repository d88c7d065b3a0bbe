#!/usr/bin/env bash
# Trust that holds against an attacker (issue 33): peers that do not hold
# the key, and peers that write to the log.
#  - gga's host attaching with a psk to impostors at the controller's
#    address: nvme_fake_tgt.py behind TLS 1.3 with a self-signed certificate
#    and no PSK (it would serve the attach and take the writes decrypted if
#    the host accepted its certificate), openssl s_server with such a
#    certificate, s_server expecting a PSK of another identity, and s_server
#    with the host's identity but another key. Each attach fails with the
#    reason; no impostor sees a completed handshake; no controller is left.
#  - gga_tgt's TLS listener and a TLS 1.3 client offering no PSK: refused
#    (the target has no certificate, nothing but the PSK authenticates).
#  - forged log lines: a Connect whose host NQN (and one whose subsystem
#    NQN) carries a newline and a fake log line, and a TLS PSK identity
#    carrying one. Each is refused, and the target's log has the text
#    escaped inside the refusal's line, never as a line of its own.
# About 10 s.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/fake_tgt_lib.sh"

command -v openssl >/dev/null || skip "openssl (the command) is needed for s_server and s_client"

TNQN=nqn.2016-06.io.gga:trust
HOST=nqn.2014-08.org.nvmexpress:uuid:3c1f6a2e-55d4-4b5c-8f0e-0a1b2c3d4e5f
PEER=$GGA_ROOT/test/integration/nvme_tls_peer.py
source "$(dirname "$0")/keys_lib.sh"
KEY_NAMES="k1"
python3 "$PEER" gen-key --hash 1 >"$KEYS/k1" && chmod 600 "$KEYS/k1"
python3 "$PEER" gen-key --hash 1 >"$KEYS/other" && chmod 600 "$KEYS/other"
# The impostors' self-signed certificate.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-subj /CN=impostor -keyout "$TMP/imp.key" -out "$TMP/imp.crt" >/dev/null 2>&1 ||
	skip "openssl req cannot make a self-signed certificate"

TLS_PORT=$(free_port)
PLAIN_PORT=$(free_port)
start_tgt t -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
listener() {
	printf '{"nqn":"%s","listen_address":{"trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s"}%s}' \
		"$TNQN" "$1" "${2:+,$2}"
}
setup_target() {
	add_keys t &&
		rpc t bdev_malloc_create '{"name":"M0","num_blocks":1024,"block_size":512}' &&
		rpc t nvmf_create_transport '{"trtype":"TCP"}' &&
		rpc t nvmf_create_subsystem "{\"nqn\":\"$TNQN\"}" &&
		rpc t nvmf_subsystem_add_ns "{\"nqn\":\"$TNQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" &&
		rpc t nvmf_subsystem_add_listener "$(listener "$TLS_PORT" '"secure_channel":true')" &&
		rpc t nvmf_subsystem_add_listener "$(listener "$PLAIN_PORT")" &&
		rpc t nvmf_subsystem_add_host "{\"nqn\":\"$TNQN\",\"host\":\"$HOST\",\"psk\":\"k1\"}"
}
check "target set-up: a TLS and a plaintext listener, one host with a psk" \
	eval 'setup_target >/dev/null'

# attach_refused NAME PORT SUBNQN WANT: gga_tgt's host attaches with psk k1
# to 127.0.0.1:PORT; the attach must fail with WANT (ERE) in its answer.
attach_refused() {
	local out
	if out=$(rpc t bdev_nvme_attach_controller \
		"{\"name\":\"$1\",\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$2\",\"subnqn\":\"$3\",\"hostnqn\":\"$HOST\",\"psk\":\"k1\"}" 2>&1); then
		echo "the attach succeeded: $out"
		return 1
	fi
	if grep -qE -- "$4" <<<"$out"; then
		return 0
	fi
	echo "attach answered: $out"
	return 1
}

# 1. A TLS 1.3 NVMe/TCP controller with a certificate and no PSK.
start_fake imp --tls-cert "$TMP/imp.crt" --tls-key "$TMP/imp.key" || not_ok "the impostor starts"
check "an impostor with a self-signed certificate and no PSK: the attach fails, saying why" \
	attach_refused I1 "$FAKE_PORT" "$NQN" "TLS handshake failed: the controller answered with a certificate"
check "the impostor saw no completed handshake (it got nothing decrypted)" \
	eval "grep -q 'TLS handshake failed' '$TMP/imp.err' && ! grep -q 'handshake completed' '$TMP/imp.err'"
check "the host logged the refusal" grep -q "instead of proving the PSK" "$TMP/t.log"
stop_fake

# listening PORT: a socket listens on 127.0.0.1:PORT (/proc/net/tcp, state 0A).
listening() {
	grep -qi "^ *[0-9]*: 0100007F:$(printf '%04X' "$1") [0-9A-F:]* 0A " /proc/net/tcp
}
# s_server's stdin: a FIFO open for reading and writing never ends (at the
# end of its stdin s_server would close the connection it serves).
mkfifo "$TMP/stdin"
exec {SRV_IN}<>"$TMP/stdin"
# s_server PORT ARGS...: openssl s_server on 127.0.0.1:PORT for one connection
# (its stdout is buffered in a file: the listening socket says it is ready).
s_server() {
	local port=$1
	shift
	openssl s_server -accept "127.0.0.1:$port" -tls1_3 -naccept 1 -no_ticket \
		-ciphersuites TLS_AES_128_GCM_SHA256 "$@" >"$TMP/s_server.$port" 2>&1 <&"$SRV_IN" &
	PIDS+=($!)
	SRV_PID=$!
	for _ in $(seq 1 50); do
		listening "$port" && return 0
		sleep 0.1
	done
	cat "$TMP/s_server.$port"
	return 1
}
# identity KEYNAME: "<PSK identity> <TLS PSK hex>" of KEYNAME for HOST on TNQN.
identity() {
	python3 "$PEER" identity --key "$(cat "$KEYS/$1")" --hostnqn "$HOST" --subnqn "$TNQN"
}
line=$(identity other)
OTHER_HEX=${line##* }

# 2. openssl s_server with a certificate and no PSK.
P2=$(free_port)
s_server "$P2" -cert "$TMP/imp.crt" -key "$TMP/imp.key" || not_ok "s_server starts"
check "s_server with a self-signed certificate and no PSK: the attach fails, saying why" \
	attach_refused I2 "$P2" "$TNQN" "TLS handshake failed: the controller answered with a certificate"
check "s_server saw no completed handshake" eval "! grep -q 'CIPHER is' '$TMP/s_server.$P2'"
kill "$SRV_PID" 2>/dev/null
wait "$SRV_PID" 2>/dev/null

# 3. s_server expecting a PSK of another identity (and a certificate).
P3=$(free_port)
s_server "$P3" -cert "$TMP/imp.crt" -key "$TMP/imp.key" -psk_identity client1 -psk "$OTHER_HEX" ||
	not_ok "s_server starts"
check "s_server with another PSK identity: the attach fails" \
	attach_refused I3 "$P3" "$TNQN" "TLS handshake failed"
check "s_server saw no completed handshake" eval "! grep -q 'CIPHER is' '$TMP/s_server.$P3'"
kill "$SRV_PID" 2>/dev/null
wait "$SRV_PID" 2>/dev/null

# 4. s_server with the host's PSK identity but another key, no certificate.
P4=$(free_port)
line=$(identity k1)
ID=${line% *}
s_server "$P4" -nocert -psk_identity "$ID" -psk "$OTHER_HEX" || not_ok "s_server starts"
check "s_server with the host's identity and another key: the attach fails" \
	attach_refused I4 "$P4" "$TNQN" "TLS handshake failed"
kill "$SRV_PID" 2>/dev/null
wait "$SRV_PID" 2>/dev/null
check "the refusals left no controller" test "$(rpc t bdev_nvme_get_controllers | jget - 'len(d)')" = 0

# 5. The target: a TLS 1.3 client with no PSK gets no secure channel.
before=$(grep -c "TLS handshake refused" "$TMP/t.log")
check "s_client offering no PSK to the TLS listener: the handshake fails" \
	eval "! timeout -k 5 20 openssl s_client -connect 127.0.0.1:$TLS_PORT -tls1_3 </dev/null >'$TMP/s_client.out' 2>&1"
check "the target logged the refused handshake" \
	test "$(grep -c "TLS handshake refused" "$TMP/t.log")" -gt "$before"

# 6. Forged log lines. FAKE: what a forger would like the log to say.
FAKE="[1.000001] nvmf_auth.c:142:auth_recv: *NOTICE*: nvmf: host FORGED authenticated queue 0"
python3 - "$GGA_ROOT/test/integration" "$PLAIN_PORT" "$TNQN" "$HOST" "$FAKE" >"$TMP/forge.out" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import nvme_tcp_client as tc
port, nqn, host, fake = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
for subnqn, hostnqn in ((nqn, "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001\n" + fake),
                        (nqn + "\n" + fake, host)):
    c = tc.Conn("127.0.0.1", port)
    cpl = c.connect(subnqn, hostnqn)
    print("refused" if not cpl.ok else "accepted", flush=True)
    c.close()
PY
check "Connects with a newline in the host NQN and in the subsystem NQN: both refused" \
	test "$(tr '\n' ' ' <"$TMP/forge.out")" = "refused refused "
timeout -k 5 30 python3 "$PEER" connect --port "$TLS_PORT" --subnqn "$TNQN" --key "$(cat "$KEYS/k1")" \
	--hostnqn "$HOST" --identity "x
$FAKE" >"$TMP/forge-tls.out" 2>&1
check "a PSK identity with a newline: the handshake is refused" grep -q "^closed:" "$TMP/forge-tls.out"
# Let the target write its lines.
for _ in $(seq 1 20); do
	[ "$(grep -c 'x0a\[1.000001\]' "$TMP/t.log")" -ge 3 ] && break
	sleep 0.1
done
check "no line of the target's log starts with the forged text" \
	eval "! grep -q '^\[1.000001\]' '$TMP/t.log'"
check "the refusals logged the host NQN escaped (\\x0a)" \
	grep -qF "uuid:00000000-0000-0000-0000-000000000001\\x0a[1.000001] nvmf_auth.c" "$TMP/t.log"
check "and the subsystem NQN" grep -qF "$TNQN\\x0a[1.000001] nvmf_auth.c" "$TMP/t.log"
check "and the PSK identity" grep -qF "'x\\x0a[1.000001] nvmf_auth.c" "$TMP/t.log"
stop_tgt "$TGT_PID" >/dev/null
check "the target exits 0 on SIGTERM" test $? -eq 0
check "no sanitizer report in the logs" sanitizer_clean "$TMP"/*.log
finish
