#!/usr/bin/env bash
# A hostile NVMe/TCP host must not hurt anyone else (issue 10): one connection
# sends an ICReq and a CapsuleCmd header with PLEN 0x7fffffff (200 bytes in
# all), reads the C2HTermReq and closes. Afterwards the daemon answers RPC
# within 1 s, a real host (bdevperf over NVMe/TCP, verify) completes with no
# failures, the reactors are idle again, and SIGTERM ends the daemon with exit
# 0 within a few seconds.
source "$(dirname "$0")/common.sh"

HOSTILE=$GGA_ROOT/test/integration/nvmf_tcp_hostile.py
BP=$BIN/bdevperf
NQN=nqn.2016-06.io.gga:hostile

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
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

write_config "$TMP/bp.json" \
	"{\"method\":\"bdev_nvme_attach_controller\",\"params\":{\"name\":\"N0\",\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$PORT\",\"subnqn\":\"$NQN\"}}"
timeout -k 5 30 "$BP" --json "$TMP/bp.json" -q 16 -o 4096 -w verify -b N0n1 -t 2 \
	>"$TMP/bp.out" 2>&1
rc=$?
check "a real host (bdevperf verify over NVMe/TCP, 2 s) exits 0 (exit $rc)" test $rc -eq 0
check "bdevperf verify: blocks compared, 0 mismatches" \
	grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$TMP/bp.out"

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
finish
