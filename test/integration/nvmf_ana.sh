#!/usr/bin/env bash
# ANA in gga_tgt: a subsystem with ana_reporting and two listeners (one
# optimized, one inaccessible), read by an NVMe/TCP host of our own
# (nvmf_ana_client.py): Identify, the ANA log page, path errors, the ANA
# change event, controller ID ranges; the RPCs' errors; save_config keeps
# the states across a restart.
source "$(dirname "$0")/common.sh"

NQN=nqn.2016-06.io.gga:ana1
PA=$(free_port)
PB=$(free_port)

addr() {
	printf '{"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1", "trsvcid": "%s"}' "$1"
}

start_tgt t0 -m 0x3 || {
	not_ok "gga_tgt starts"
	finish
}
rpc t0 bdev_malloc_create --name A1 --num_blocks 1024 --block_size 512 >/dev/null
rpc t0 bdev_malloc_create --name A2 --num_blocks 1024 --block_size 512 >/dev/null
rpc t0 nvmf_create_transport --trtype TCP >/dev/null
rpc t0 nvmf_create_subsystem --nqn nqn.2016-06.io.gga:plain --allow_any_host true >/dev/null
rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"nqn.2016-06.io.gga:plain\", \"listen_address\": $(addr "$PA")}" >/dev/null
check_fails "set_ana_state on a subsystem without ana_reporting" \
	rpc t0 nvmf_subsystem_listener_set_ana_state --nqn nqn.2016-06.io.gga:plain \
	--ana_state inaccessible --listen_address "$(addr "$PA")"
check_fails "add_listener inaccessible without ana_reporting" \
	rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"nqn.2016-06.io.gga:plain\", \"listen_address\": $(addr "$PB"), \"ana_state\": \"inaccessible\"}"
check_fails "min_cntlid above max_cntlid" rpc t0 nvmf_create_subsystem --nqn $NQN \
	--min_cntlid 200 --max_cntlid 100
check "nvmf_create_subsystem with ana_reporting and controller IDs 100-199" \
	rpc t0 nvmf_create_subsystem --nqn $NQN --allow_any_host true --ana_reporting true \
	--max_namespaces 4 --min_cntlid 100 --max_cntlid 199
rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"A1\", \"nsid\": 1}}" >/dev/null
check_fails "add_ns: anagrpid over max_namespaces" rpc t0 nvmf_subsystem_add_ns \
	"{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"A2\", \"nsid\": 2, \"anagrpid\": 5}}"
check "add_ns with anagrpid 2" rpc t0 nvmf_subsystem_add_ns \
	"{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"A2\", \"nsid\": 2, \"anagrpid\": 2}}"
check "listener A (optimized)" rpc t0 nvmf_subsystem_add_listener \
	"{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA")}"
check "listener B (inaccessible)" rpc t0 nvmf_subsystem_add_listener \
	"{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PB"), \"ana_state\": \"inaccessible\"}"
check_fails "set_ana_state: an unknown state" rpc t0 nvmf_subsystem_listener_set_ana_state \
	--nqn $NQN --ana_state sleepy --listen_address "$(addr "$PB")"
check_fails "set_ana_state: a listener the subsystem does not have" \
	rpc t0 nvmf_subsystem_listener_set_ana_state --nqn $NQN --ana_state optimized \
	--listen_address "$(addr 9)"
check "Identify, ANA log page, path errors, the ANA change event, controller IDs" \
	timeout -k 5 120 python3 "$GGA_ROOT/test/integration/nvmf_ana_client.py" --port-a "$PA" \
	--port-b "$PB" --nqn $NQN --rpc "$BIN/gga_rpc -s $TMP/t0.sock" ana
rpc t0 nvmf_subsystem_get_listeners --nqn $NQN >"$TMP/before.json"
check "nvmf_subsystem_get_listeners: B optimized, its group 2 in change" \
	test "$(jget "$TMP/before.json" '[[g["ana_state"] for g in l["ana_states"][:2]] for l in d]')" = \
	'[["optimized", "optimized"], ["optimized", "change"]]'
rpc t0 save_config >"$TMP/config.json"
stop_tgt "$TGT_PID" TERM
check "SIGTERM: exit 0" test $? -eq 0
start_tgt t0 -m 0x3 --json "$TMP/config.json" || not_ok "gga_tgt restarts from the saved config"
rpc t0 nvmf_subsystem_get_listeners --nqn $NQN >"$TMP/after.json"
check "the restart kept every listener's ANA states" cmp -s "$TMP/before.json" "$TMP/after.json"
check "and ana_reporting, the controller ID range, the ANA groups" \
	test "$(rpc t0 nvmf_get_subsystems --nqn $NQN | jget - '[d[0]["ana_reporting"], d[0]["min_cntlid"], d[0]["max_cntlid"], [n["anagrpid"] for n in d[0]["namespaces"]]]')" = \
	'[true, 100, 199, [1, 2]]'
stop_tgt "$TGT_PID" INT
check "SIGINT: exit 0" test $? -eq 0
finish
