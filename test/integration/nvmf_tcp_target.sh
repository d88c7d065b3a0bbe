#!/usr/bin/env bash
# The NVMe-oF target over NVMe/TCP: nvmf RPCs (and their errors), then real
# NVMe/TCP from nvme_tcp_client.py against malloc namespaces on 127.0.0.1:
# Connect, properties, Identify, I/O with in-capsule data and R2T, C2H
# splitting, digests, discovery, AENs, keep-alive, host access, malformed
# PDUs and commands, many connections; then subsystem deletion under a
# connected host, save_config -> --json, idle CPU, and SIGTERM with hosts
# connected.
source "$(dirname "$0")/common.sh"

CLIENT=$GGA_ROOT/test/integration/nvme_tcp_client.py
NQN=nqn.2016-06.io.gga:cnode1
NQN2=nqn.2016-06.io.gga:cnode2
NQN3=nqn.2016-06.io.gga:cnode3
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:0b9f8a3c-1d2e-4f50-8a6b-7c8d9e0f1a2b
OTHERHOST=nqn.2014-08.org.example:intruder

# A free TCP port on 127.0.0.1 (the kernel picks it, so parallel runs do not collide).
PORT=$(free_port)

# client SCENARIO [args...]: run one client scenario against $PORT, bounded in time.
client() {
	local sc=$1
	shift
	timeout -k 5 120 python3 "$CLIENT" --port "$PORT" --rpc "$BIN/gga_rpc -s $TMP/t0.sock" \
		--hostnqn "$HOSTNQN" "$@" "$sc"
}

listener() {
	printf '{"nqn": "%s", "listen_address": {"trtype": "%s", "adrfam": "IPv4", "traddr": "%s", "trsvcid": "%s"}}' \
		"$1" "${4:-TCP}" "${3:-127.0.0.1}" "$2"
}

start_tgt t0 -m 0x3 || {
	not_ok "gga_tgt starts"
	finish
}
ok "gga_tgt starts"

rpc t0 rpc_get_methods >"$TMP/methods.json"
for m in nvmf_create_transport nvmf_get_transports nvmf_create_subsystem nvmf_delete_subsystem \
	nvmf_subsystem_add_ns nvmf_subsystem_remove_ns nvmf_subsystem_add_listener \
	nvmf_subsystem_remove_listener nvmf_subsystem_add_host nvmf_subsystem_remove_host \
	nvmf_get_subsystems nvmf_get_stats; do
	check "rpc_get_methods lists $m" grep -q "\"$m\"" "$TMP/methods.json"
done
check "the discovery subsystem exists from the start" \
	test "$(rpc t0 nvmf_get_subsystems | jget - '[s["subtype"] for s in d]')" = '["Discovery"]'

rpc t0 bdev_malloc_create --name M0 --num_blocks 16384 --block_size 512 >/dev/null
rpc t0 bdev_malloc_create --name M1 --num_blocks 1024 --block_size 4096 --md_size 64 >/dev/null
rpc t0 bdev_malloc_create --name M3 --num_blocks 1024 --block_size 512 >/dev/null

# Subsystem RPCs and their errors: nothing half-created.
check "nvmf_create_subsystem" rpc t0 nvmf_create_subsystem --nqn $NQN --serial_number GGA0001 \
	--allow_any_host true
check_fails "create_subsystem: duplicate NQN" rpc t0 nvmf_create_subsystem --nqn $NQN
check_fails "create_subsystem: malformed NQN" rpc t0 nvmf_create_subsystem --nqn not-an-nqn
check_fails "create_subsystem: the discovery NQN" \
	rpc t0 nvmf_create_subsystem --nqn nqn.2014-08.org.nvmexpress.discovery
check_fails "create_subsystem: serial number too long" \
	rpc t0 nvmf_create_subsystem --nqn $NQN3 --serial_number 123456789012345678901
check_fails "create_subsystem: unknown parameter" \
	rpc t0 nvmf_create_subsystem --nqn $NQN3 --bogus 1
check_fails "create_subsystem: max_namespaces 0" \
	rpc t0 nvmf_create_subsystem --nqn $NQN3 --max_namespaces 0
check "failed creations left nothing behind" \
	test "$(rpc t0 nvmf_get_subsystems | jget - 'len(d)')" = 2

# Listener before any transport.
rpc t0 nvmf_subsystem_add_listener "$(listener $NQN "$PORT")" >/dev/null 2>"$TMP/err"
check "add_listener before nvmf_create_transport fails" \
	grep -q "nvmf_create_transport" "$TMP/err"

check_fails "create_transport: unknown trtype" rpc t0 nvmf_create_transport --trtype FOO
check_fails "create_transport: in_capsule_data_size not a multiple of 16" \
	rpc t0 nvmf_create_transport --trtype TCP --in_capsule_data_size 100
check_fails "create_transport: io_unit_size over max_io_size" \
	rpc t0 nvmf_create_transport --trtype TCP --io_unit_size 262144
check_fails "create_transport: unknown parameter" \
	rpc t0 nvmf_create_transport --trtype TCP --c2h_bogus 1
check "nvmf_create_transport (trtype is case-insensitive)" rpc t0 nvmf_create_transport --trtype tcp
check_fails "a second TCP transport" rpc t0 nvmf_create_transport --trtype TCP
check "nvmf_get_transports" \
	test "$(rpc t0 nvmf_get_transports | jget - '[(t["trtype"], t["in_capsule_data_size"]) for t in d]')" = '[["TCP", 8192]]'

check_fails "add_ns: missing bdev" rpc t0 nvmf_subsystem_add_ns \
	"{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"nope\"}}"
check_fails "add_ns: nsid over max_namespaces" rpc t0 nvmf_subsystem_add_ns \
	"{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M0\", \"nsid\": 33}}"
check_fails "add_ns: unknown subsystem" rpc t0 nvmf_subsystem_add_ns \
	"{\"nqn\": \"$NQN3\", \"namespace\": {\"bdev_name\": \"M0\"}}"
check "add_ns returns the nsid" test "$(rpc t0 nvmf_subsystem_add_ns \
	"{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M0\"}}")" = 1
check_fails "add_ns: nsid in use" rpc t0 nvmf_subsystem_add_ns \
	"{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M3\", \"nsid\": 1}}"
check_fails "add_ns: the same bdev twice in one subsystem" rpc t0 nvmf_subsystem_add_ns \
	"{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M0\"}}"
check_fails "add_listener: bad address" rpc t0 nvmf_subsystem_add_listener "$(listener $NQN "$PORT" 127.0.0.300)"
check_fails "add_listener: bad port" rpc t0 nvmf_subsystem_add_listener "$(listener $NQN 70000)"
check_fails "add_listener: unknown trtype" rpc t0 nvmf_subsystem_add_listener "$(listener $NQN "$PORT" 127.0.0.1 XYZ)"
check "nvmf_subsystem_add_listener" rpc t0 nvmf_subsystem_add_listener "$(listener $NQN "$PORT")"
check_fails "add_listener: twice" rpc t0 nvmf_subsystem_add_listener "$(listener $NQN "$PORT")"

rpc t0 nvmf_create_subsystem --nqn $NQN2 --serial_number GGA0002 --allow_any_host true >/dev/null
rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN2\", \"namespace\": {\"bdev_name\": \"M1\"}}" >/dev/null
rpc t0 nvmf_subsystem_add_listener "$(listener $NQN2 "$PORT")" >/dev/null
rpc t0 nvmf_create_subsystem --nqn $NQN3 --serial_number GGA0003 >/dev/null
rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN3\", \"namespace\": {\"bdev_name\": \"M3\"}}" >/dev/null
rpc t0 nvmf_subsystem_add_listener "$(listener $NQN3 "$PORT")" >/dev/null
check "nvmf_subsystem_add_host" rpc t0 nvmf_subsystem_add_host --nqn $NQN3 --host "$HOSTNQN"
check_fails "add_host: twice" rpc t0 nvmf_subsystem_add_host --nqn $NQN3 --host "$HOSTNQN"
check_fails "add_host: malformed host NQN" rpc t0 nvmf_subsystem_add_host --nqn $NQN3 --host bad
rpc t0 nvmf_get_subsystems >"$TMP/subs.json"
check "nvmf_get_subsystems shows namespaces, listeners, hosts" \
	test "$(jget "$TMP/subs.json" '[(s["nqn"][-6:], [n["bdev_name"] for n in s.get("namespaces", [])], len(s["listen_addresses"]), [h["nqn"][-4:] for h in s["hosts"]]) for s in d[1:]]')" = \
	'[["cnode1", ["M0"], 1, []], ["cnode2", ["M1"], 1, []], ["cnode3", ["M3"], 1, ["1a2b"]]]'

# Real NVMe/TCP.
check "Connect, properties, Identify, I/O (in-capsule, R2T, split C2H), errors, shutdown" \
	client basic --nqn $NQN --num-blocks 16384 --serial GGA0001
check "the same with a 4096+64 extended-LBA namespace" \
	client basic --nqn $NQN2 --block-size 4096 --md-size 64 --num-blocks 1024 --serial GGA0002
check "header and data digests (bad header digest fatal, bad data digest fails the command)" \
	client digest --nqn $NQN
check "discovery controller and log page" client discovery --nqn $NQN
check "malformed PDUs get the right C2HTermReq; other connections keep working" \
	client bad-pdu --nqn $NQN
check "Connect validation (unknown NQN, sqsize, cntlid, qid, disallowed host...)" \
	client connect-errors --nqn $NQN3 --bad-host "$OTHERHOST"
check "allowed host connects" client host-allowed --nqn $NQN3
check "other hosts get Connect Invalid Host" client host-denied --nqn $NQN3 --hostnqn "$OTHERHOST"
check "discovery log lists what the host may use (3 subsystems)" \
	client discovery-count --nqn $NQN --count 3
check "discovery log of another host leaves cnode3 out" \
	client discovery-count --nqn $NQN --hostnqn "$OTHERHOST" --count 2
check "PDUs split into tiny pieces, pipelined commands" client partial --nqn $NQN
check "6 controllers x 3 I/O queues at once" client many --nqn $NQN --count 6
check "namespace add / hot remove raise AENs; AER limit and Abort" client aer --nqn $NQN
check "keep-alive timeout tears the controller down" client keep-alive --nqn $NQN
check "CC.SHN normal and abrupt with AERs held and writes in flight: success first, SHST complete, I/O queue gone" \
	client shutdown --nqn $NQN
check "the target logs the notification and its completion" \
	bash -c "grep -q \"abrupt shutdown notification\" $TMP/t0.log && grep -q \"shutdown complete\" $TMP/t0.log"
check "a connection that sends no ICReq is closed after 3 s (handshake_timeout_ms)" client silent --nqn $NQN

rpc t0 nvmf_get_stats >"$TMP/stats.json"
check "nvmf_get_stats: one poll group per reactor, connections counted" \
	test "$(jget "$TMP/stats.json" '[len(d["poll_groups"]), sum(p["admin_qpairs"] for p in d["poll_groups"]) > 10]')" = '[2, true]'

check "nvmf_subsystem_remove_host" rpc t0 nvmf_subsystem_remove_host --nqn $NQN3 --host "$HOSTNQN"
check "a removed host is refused" client host-denied --nqn $NQN3
check_fails "remove_host: unknown host" rpc t0 nvmf_subsystem_remove_host --nqn $NQN3 --host "$HOSTNQN"
check "nvmf_subsystem_remove_ns" rpc t0 nvmf_subsystem_remove_ns --nqn $NQN3 --nsid 1
check_fails "remove_ns: twice" rpc t0 nvmf_subsystem_remove_ns --nqn $NQN3 --nsid 1
check "M3 is free again (closed by the target)" \
	test "$(rpc t0 bdev_get_bdevs --name M3 | jget - 'd[0]["claimed"]')" = false

# Deleting a subsystem disconnects its hosts.
rpc t0 nvmf_subsystem_allow_any_host --nqn $NQN2 --allow_any_host true >/dev/null
client hold --nqn $NQN2 --block-size 4096 --md-size 64 --num-blocks 1024 --seconds 20 \
	>"$TMP/hold2.out" 2>&1 &
hold=$!
PIDS+=("$hold")
for i in $(seq 1 50); do grep -q connected "$TMP/hold2.out" && break; sleep 0.1; done
check "nvmf_delete_subsystem with a connected host" rpc t0 nvmf_delete_subsystem --nqn $NQN2
wait $hold
check "the host's connection was closed" grep -q '^closed' "$TMP/hold2.out"
check_fails "delete_subsystem: twice" rpc t0 nvmf_delete_subsystem --nqn $NQN2
check "bdev M1 still exists" bash -c "rpc_out=\$(\"$BIN/gga_rpc\" -s $TMP/t0.sock bdev_get_bdevs --name M1)"
# Removing a listener disconnects the hosts that came in through it.
rpc t0 nvmf_subsystem_add_host --nqn $NQN3 --host "$HOSTNQN" >/dev/null
client hold --nqn $NQN3 --seconds 20 >"$TMP/hold3.out" 2>&1 &
hold=$!
PIDS+=("$hold")
for i in $(seq 1 50); do grep -q connected "$TMP/hold3.out" && break; sleep 0.1; done
check "nvmf_subsystem_remove_listener" rpc t0 nvmf_subsystem_remove_listener "$(listener $NQN3 "$PORT")"
wait $hold
check "the host that came in through it was disconnected" grep -q '^closed' "$TMP/hold3.out"
check_fails "remove_listener: twice" rpc t0 nvmf_subsystem_remove_listener "$(listener $NQN3 "$PORT")"
check "cnode1 still serves I/O" client read --nqn $NQN

# save_config -> --json restores transports, subsystems, hosts, namespaces, listeners.
rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN3\", \"namespace\": {\"bdev_name\": \"M3\", \"nsid\": 5}}" >/dev/null
rpc t0 nvmf_subsystem_add_listener "$(listener $NQN3 "$PORT")" >/dev/null
rpc t0 save_config >"$TMP/config.json"
rpc t0 nvmf_get_subsystems | jget - '[(s["nqn"], s["allow_any_host"], s.get("serial_number"), [(n["nsid"], n["bdev_name"]) for n in s.get("namespaces", [])], s["listen_addresses"], s["hosts"]) for s in d]' >"$TMP/before.txt"
check "save_config has the nvmf calls in order" \
	test "$(jget "$TMP/config.json" '[c["method"] for s in d["subsystems"] if s["subsystem"] == "nvmf" for c in s["config"]]')" = \
	'["nvmf_create_transport", "nvmf_create_subsystem", "nvmf_subsystem_add_ns", "nvmf_subsystem_add_listener", "nvmf_create_subsystem", "nvmf_subsystem_add_host", "nvmf_subsystem_add_ns", "nvmf_subsystem_add_listener"]'

# SIGTERM with a host connected: clean exit, the host sees its connection close.
client hold --nqn $NQN --seconds 20 >"$TMP/hold.out" 2>&1 &
hold=$!
PIDS+=("$hold")
for i in $(seq 1 50); do grep -q connected "$TMP/hold.out" && break; sleep 0.1; done
check "idle target with a host connected uses little CPU" bash -c "
	a=\$(awk '{print \$14 + \$15}' /proc/$TGT_PID/stat); sleep 2
	b=\$(awk '{print \$14 + \$15}' /proc/$TGT_PID/stat); test \$((b - a)) -lt 40"
stop_tgt "$TGT_PID" TERM
check "SIGTERM with hosts connected: exit 0" test $? -eq 0
wait $hold
check "the host's connection was closed at shutdown" grep -q '^closed' "$TMP/hold.out"

start_tgt t1 -m 0x3 --json "$TMP/config.json" || not_ok "gga_tgt starts from the saved config"
rpc t1 nvmf_get_subsystems | jget - '[(s["nqn"], s["allow_any_host"], s.get("serial_number"), [(n["nsid"], n["bdev_name"]) for n in s.get("namespaces", [])], s["listen_addresses"], s["hosts"]) for s in d]' >"$TMP/after.txt"
check "the restored subsystems equal the saved ones" cmp -s "$TMP/before.txt" "$TMP/after.txt"
check "the restored target serves NVMe/TCP" client read --nqn $NQN
check "the restored host list is enforced" client host-denied --nqn $NQN3 --hostnqn "$OTHERHOST"
stop_tgt "$TGT_PID" INT
check "SIGINT: exit 0" test $? -eq 0

finish
