#!/usr/bin/env bash
# DH-HMAC-CHAP against an attacker who can reach the port and knows a keyed
# host's NQN, not its key (issue 33), with test/integration/nvme_auth.py's
# raw host:
#  - rounds of 40 exchanges at once offering only ffdhe8192, each with a junk
#    Reply, while the real host's established controller runs Identify and
#    Read and authenticates a new I/O queue: the real host is served, the
#    exchanges over the per-host cap are refused (counted by the attacker and
#    by nvmf_get_stats), the log says so a few times, not per exchange, and
#    no reactor stalls (--stall-warn-ms 100: the costly steps are on workers);
#  - unauthenticated Connects as a keyed host, twice as many as the
#    subsystem's controller ids: another host still gets a controller;
#  - unauthenticated Connects for qids 1 and 2 of the real host's controller:
#    the real host's qid 1 still connects;
#  - an unauthenticated queue of a controller whose host went silent keeps
#    sending: the controller still times out (keep-alive).
source "$(dirname "$0")/common.sh"

NQN=nqn.2016-06.io.gga:attack
SMALL=nqn.2016-06.io.gga:small
HOST=nqn.2014-08.org.nvmexpress:uuid:0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e
HOST2=nqn.2014-08.org.nvmexpress:uuid:1d2e3f4a-5b6c-4d7e-9f80-a12b3c4d5e6f
HOST3=nqn.2014-08.org.nvmexpress:uuid:2e3f4a5b-6c7d-4e8f-a091-b23c4d5e6f70
AUTHPY=$GGA_ROOT/test/integration/nvme_auth.py
source "$(dirname "$0")/keys_lib.sh"
KEY_NAMES="hk h2"
for k in hk h2; do
	python3 "$AUTHPY" gen-key --hash 1 >"$KEYS/$k"
	chmod 600 "$KEYS/$k"
done

PORT=$(free_port)
# A stall of the app thread's reactor over 100 ms is logged ("stuck in ...").
start_tgt t -m 0x1 --stall-warn-ms 100 || {
	not_ok "gga_tgt starts"
	finish
}
T_PID=$TGT_PID
listener() {
	printf '{"nqn":"%s","listen_address":{"trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s"}}' "$1" "$PORT"
}
host() {
	printf '{"nqn":"%s","host":"%s"%s}' "$1" "$2" "${3:+,\"dhchap_key\":\"$3\"}"
}
setup_target() {
	add_keys t &&
		rpc t bdev_malloc_create '{"name":"M0","num_blocks":2048,"block_size":512}' &&
		rpc t nvmf_create_transport '{"trtype":"TCP"}' &&
		rpc t nvmf_create_subsystem "{\"nqn\":\"$NQN\"}" &&
		rpc t nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" &&
		rpc t nvmf_subsystem_add_listener "$(listener $NQN)" &&
		rpc t nvmf_subsystem_add_host "$(host $NQN $HOST hk)" &&
		rpc t nvmf_subsystem_add_host "$(host $NQN $HOST2 h2)" &&
		rpc t nvmf_create_subsystem "{\"nqn\":\"$SMALL\",\"max_cntlid\":4}" &&
		rpc t nvmf_subsystem_add_listener "$(listener $SMALL)" &&
		rpc t nvmf_subsystem_add_host "$(host $SMALL $HOST hk)" &&
		rpc t nvmf_subsystem_add_host "$(host $SMALL $HOST3)"
}
check "target set-up: two keyed hosts; a subsystem of 4 controller ids with a host without a key" \
	eval 'setup_target >/dev/null'

# py ARGS...: the raw host against the target. The real hosts use ffdhe2048
# (Python's own DH is slow with ffdhe8192); the attacker offers ffdhe8192 only.
py() {
	timeout -k 5 60 python3 "$AUTHPY" "$@" --addr 127.0.0.1 --port "$PORT"
}

# The flood, while the real host (HOST2) works and authenticates a new queue.
py attack probe --subnqn "$NQN" --hostnqn "$HOST2" --secret "$(cat "$KEYS/h2")" \
	--dhgroup ffdhe2048 --seconds 6 --new-queue-at 1.5 --ready-file "$TMP/ready" >"$TMP/probe.out" 2>&1 &
probe=$!
PIDS+=("$probe")
for _ in $(seq 1 100); do
	[ -e "$TMP/ready" ] || ! kill -0 "$probe" 2>/dev/null && break
	sleep 0.1
done
py attack flood --subnqn "$NQN" --hostnqn "$HOST" --count 40 --rounds 4 \
	--digest sha512 --dhgroup ffdhe8192 >"$TMP/flood.out" 2>&1
wait "$probe"
probe_rc=$?
cat "$TMP/probe.out" "$TMP/flood.out"
check "the real host's controller served Identify and Read and authenticated a new queue \
during the flood" test "$probe_rc" = 0
refused=$(python3 -c 'import json,sys
print(json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][0])["refused"])' \
	"$TMP/flood.out" 2>/dev/null || echo 0)
check "the flood's exchanges over the per-host cap were refused at once ($refused of 160)" \
	test "$refused" -ge 40
rpc t nvmf_get_stats >"$TMP/stats.json"
check "nvmf_get_stats counts the refusals by host" \
	test "$(jget "$TMP/stats.json" 'd["dhchap"]["refused_host"]')" -ge "$refused"
n_log=$(grep -c "refusing DH-HMAC-CHAP of host" "$TMP/t.log")
check "the refusals were logged $n_log time(s), not once per exchange" \
	test "$n_log" -ge 1 -a "$n_log" -le 3
check_fails "and no line per refused queue" grep -q "failed: too many authentications" "$TMP/t.log"
check_fails "no reactor stalled (no 'stuck in' warning)" grep -q "stuck in" "$TMP/t.log"

check "unauthenticated Connects as a keyed host do not take the controller ids" \
	py attack cntlids --subnqn "$SMALL" --hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" \
	--dhgroup ffdhe2048 --other-hostnqn "$HOST3" --count 8
check "unauthenticated Connects for qids 1 and 2 do not stop the real host's qid 1" \
	py attack qid --subnqn "$NQN" --hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" \
	--dhgroup ffdhe2048
check "an unauthenticated queue does not keep its controller's keep-alive fed" \
	py attack keepalive --subnqn "$NQN" --hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" \
	--dhgroup ffdhe2048 --kato 1000
check "the target logged the keep-alive timeout" grep -q "keep alive timeout (1000 ms)" "$TMP/t.log"
check "the target still serves" py connect --subnqn "$NQN" --hostnqn "$HOST2" \
	--secret "$(cat "$KEYS/h2")" --dhgroup ffdhe2048 --io-queue
check_fails "still no reactor stall" grep -q "stuck in" "$TMP/t.log"

# Queues that go while their step is on a worker; then SIGTERM while steps are out.
check "queues closed while their Replies are being checked: the target still serves" \
	eval 'py attack flood --subnqn "$NQN" --hostnqn "$HOST" --count 16 --abandon \
	--digest sha512 --dhgroup ffdhe8192 >/dev/null &&
	py connect --subnqn "$NQN" --hostnqn "$HOST2" --secret "$(cat "$KEYS/h2")" \
	--dhgroup ffdhe2048 >/dev/null'
py attack flood --subnqn "$NQN" --hostnqn "$HOST" --count 40 --rounds 20 \
	--digest sha512 --dhgroup ffdhe8192 >/dev/null 2>&1 &
flood=$!
PIDS+=("$flood")
for _ in $(seq 1 100); do
	[ "$(rpc t nvmf_get_stats | jget - 'd["dhchap"]["inflight"]')" -gt 0 ] && break
	sleep 0.05
done
rpc t nvmf_get_stats >"$TMP/stats2.json"
stop_tgt "$T_PID"
rc=$?
wait "$flood" 2>/dev/null
check "SIGTERM with steps on the workers ($(jget "$TMP/stats2.json" 'd["dhchap"]["inflight"]') \
in flight): gga_tgt exits 0" test "$rc" = 0
check "and stopped the target cleanly" grep -q "nvmf: target stopped" "$TMP/t.log"
finish
