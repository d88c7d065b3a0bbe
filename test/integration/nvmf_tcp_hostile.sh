#!/usr/bin/env bash
# A hostile NVMe/TCP host must not hurt anyone else (issue 10): one connection
# sends an ICReq and a CapsuleCmd header with PLEN 0x7fffffff (200 bytes in
# all), reads the C2HTermReq and closes. Afterwards the daemon answers RPC
# within 1 s, a real host (bdevperf over NVMe/TCP, verify) completes with no
# failures, the reactors are idle again, and SIGTERM ends the daemon with exit
# 0 within a few seconds.
# Then the same class of bug on the listener: a daemon out of fds (ulimit -n
# 48) with 60 connections waiting must not spin on its readable listening
# socket nor flood its log, and serves again once they are gone.
source "$(dirname "$0")/common.sh"

HOSTILE=$GGA_ROOT/test/integration/nvmf_tcp_hostile.py
NQN=nqn.2016-06.io.gga:hostile

PORT=$(free_port)
hz=$(getconf CLK_TCK)

start_tgt h0 -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
ok "gga_tgt starts"
rpc h0 bdev_malloc_create '{"name":"M0","num_blocks":16384,"block_size":512}' >/dev/null &&
	rpc h0 nvmf_create_transport '{"trtype":"TCP"}' >/dev/null &&
	rpc h0 nvmf_create_subsystem "{\"nqn\":\"$NQN\",\"allow_any_host\":true}" >/dev/null &&
	rpc h0 nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" >/dev/null &&
	rpc h0 nvmf_subsystem_add_listener "{\"nqn\":\"$NQN\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$PORT\"}}" >/dev/null
check "target setup (malloc namespace, TCP listener on 127.0.0.1)" test $? -eq 0

check "hostile host: ICReq + CapsuleCmd with PLEN 0x7fffffff gets an ICResp, then a C2HTermReq" \
	timeout -k 2 10 python3 "$HOSTILE" --port "$PORT" huge-plen

# Give the target a moment to see the close, then it must be its old self.
sleep 1
check "the daemon answers an RPC within 1 s" \
	timeout -k 1 1 "$BIN/gga_rpc" -s "$TMP/h0.sock" rpc_get_methods >/dev/null

tcp_verify "$TMP/bp.out" "$PORT" "$NQN" -q 16 -o 4096 -t 2
rc=$?
check "a real host (bdevperf verify over NVMe/TCP, 2 s) exits 0 (exit $rc)" test $rc -eq 0
check "bdevperf verify: blocks compared, 0 mismatches" verified "$TMP/bp.out"

sleep 0.5
t0=$(proc_cpu_ticks "$TGT_PID")
sleep 2
t1=$(proc_cpu_ticks "$TGT_PID")
ticks=$((t1 - t0))
echo "gga_tgt used $ticks ticks (of $((2 * hz))) in 2 s after the hostile host"
check "the reactor is idle again (used $ticks ticks in 2 s, want <= 10)" test $ticks -le 10

stop_tgt "$TGT_PID"
rc=$?
check "SIGTERM ends the daemon with exit 0 (exit $rc)" test $rc -eq 0
grep -i 'error\|warn' "$TMP/h0.log" | head -5

# --- Out of fds: accept() fails with EMFILE while the listener stays readable ---
PORT2=$(free_port)
(
	ulimit -n 48
	exec "$BIN/gga_tgt" -m 0x1 -r "$TMP/h1.sock" >"$TMP/h1.log" 2>&1
) &
H1=$!
PIDS+=("$H1")
for i in $(seq 1 100); do
	grep -q ': ready' "$TMP/h1.log" 2>/dev/null && break
	sleep 0.1
done
rpc h1 bdev_malloc_create '{"name":"M0","num_blocks":16384,"block_size":512}' >/dev/null &&
	rpc h1 nvmf_create_transport '{"trtype":"TCP"}' >/dev/null &&
	rpc h1 nvmf_create_subsystem "{\"nqn\":\"$NQN\",\"allow_any_host\":true}" >/dev/null &&
	rpc h1 nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" >/dev/null &&
	rpc h1 nvmf_subsystem_add_listener "{\"nqn\":\"$NQN\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$PORT2\"}}" >/dev/null
check "fd-limited target setup (ulimit -n 48)" test $? -eq 0
timeout -k 2 20 python3 "$HOSTILE" --port "$PORT2" --count 60 --seconds 3 hold >"$TMP/hold.out" 2>&1 &
hpid=$!
PIDS+=("$hpid")
sleep 0.8
t0=$(proc_cpu_ticks "$H1")
sleep 2
t1=$(proc_cpu_ticks "$H1")
ticks=$((t1 - t0))
wait "$hpid"
check "60 connections held against a 48-fd daemon" test $? -eq 0
check "out of fds: the daemon does not spin on its listener ($ticks ticks in 2 s, want <= 10)" \
	test $ticks -le 10
check "out of fds: said once, not flooded ($(grep -c 'Too many open files' "$TMP/h1.log") lines)" \
	test "$(grep -c 'Too many open files' "$TMP/h1.log")" -le 3
check "out of fds: the daemon answers RPC within 1 s" \
	timeout -k 1 1 "$BIN/gga_rpc" -s "$TMP/h1.sock" rpc_get_methods >/dev/null
sleep 0.5
tcp_verify "$TMP/bp1.out" "$PORT2" "$NQN" -q 16 -o 4096 -t 1
rc=$?
check "fds back: bdevperf verify over NVMe/TCP exits 0 (exit $rc)" test $rc -eq 0
stop_tgt "$H1"
rc=$?
check "fd-limited daemon: SIGTERM exit 0 (exit $rc)" test $rc -eq 0
finish
