#!/usr/bin/env bash
# NVMe reservations in gga_tgt, from two NVMe/TCP hosts of our own
# (nvmf_resv_client.py) on 127.0.0.1: every command, action and type with
# its access table; persist through power loss across restarts
# (ptpl_file on nvmf_subsystem_add_ns, kept by save_config); a preempt
# that fences the other host's writes; bad ptpl files refused whole.
source "$(dirname "$0")/common.sh"

CLIENT=$GGA_ROOT/test/integration/nvmf_resv_client.py
NQN=nqn.2016-06.io.gga:resv1
PORT=$(free_port)
PTPL=$TMP/resv-ns2.json

client() {
	local sc=$1
	shift
	timeout -k 5 120 python3 "$CLIENT" --port "$PORT" --nqn $NQN \
		--rpc "$BIN/gga_rpc -s $TMP/t0.sock" "$@" "$sc"
}

add_ns() {
	rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": $1}"
}

start_tgt t0 -m 0x3 || {
	not_ok "gga_tgt starts"
	finish
}
rpc t0 bdev_malloc_create --name R1 --num_blocks 4096 --block_size 512 >/dev/null
rpc t0 bdev_malloc_create --name R2 --num_blocks 4096 --block_size 512 >/dev/null
rpc t0 nvmf_create_transport --trtype TCP >/dev/null
rpc t0 nvmf_create_subsystem --nqn $NQN --serial_number GGARESV1 --allow_any_host true >/dev/null
check "add_ns without ptpl_file" add_ns '{"bdev_name": "R1", "nsid": 1}'
echo '{"format": "something else"}' >"$TMP/foreign.json"
check_fails "add_ns with a ptpl_file that is not ours" \
	add_ns "{\"bdev_name\": \"R2\", \"nsid\": 2, \"ptpl_file\": \"$TMP/foreign.json\"}"
echo '{"format": "gga-nvmf-reservations-1", "ptpl": true, "generation": 1, "rtype": 1, "holder": "a0a0a0a0-a0a0-a0a0-a0a0-a0a0a0a0a001", "registrants": []}' >"$TMP/orphan.json"
check_fails "add_ns with a ptpl_file whose holder is not registered" \
	add_ns "{\"bdev_name\": \"R2\", \"nsid\": 2, \"ptpl_file\": \"$TMP/orphan.json\"}"
check "the refused add_ns left nothing behind (R2 free, one namespace)" \
	test "$(rpc t0 nvmf_get_subsystems | jget - '[len(s.get("namespaces", [])) for s in d if s["nqn"] == "'$NQN'"]')" = '[1]'
check "add_ns with a ptpl_file that does not exist yet" \
	add_ns "{\"bdev_name\": \"R2\", \"nsid\": 2, \"ptpl_file\": \"$PTPL\"}"
rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": {\"trtype\": \"TCP\", \"adrfam\": \"IPv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"$PORT\"}}" >/dev/null

check "register, acquire, preempt, release, clear, report; the access of all six types" \
	client basic --nsid 1
check "a preempt fences the other host: its writes complete before or fail after" \
	client fence --nsid 1
check "reservation notifications: log page 80h, its event, Feature 82h masks" \
	client notify --nsid 1
rpc t0 bdev_malloc_create --name R3 --num_blocks 4096 --block_size 512 >/dev/null
rpc t0 bdev_error_create --base_name R3 >/dev/null
add_ns '{"bdev_name": "EE_R3", "nsid": 3}' >/dev/null
check "a preempt waits for the other host's write in flight (held by an error bdev)" \
	client fence-held --nsid 3
check "the namespace went with its bdev, after the preempt" \
	test "$(rpc t0 nvmf_get_subsystems | jget - '[[n["nsid"] for n in s.get("namespaces", [])] for s in d if s["nqn"] == "'$NQN'"]')" = '[[1, 2]]'
# (Should the scenario have failed early, its held write must not hold the shutdown.)
rpc t0 bdev_error_delete --name EE_R3 >/dev/null 2>&1
check "register with persist through power loss, acquire" client ptpl-set --nsid 2
check "the persist file was written" grep -q '"ptpl": true' "$PTPL"
rpc t0 save_config >"$TMP/config.json"
check "save_config keeps ptpl_file" \
	test "$(jget "$TMP/config.json" '[c["params"]["namespace"].get("ptpl_file") for s in d["subsystems"] if s["subsystem"] == "nvmf" for c in s["config"] if c["method"] == "nvmf_subsystem_add_ns"]')" = "[null, \"$PTPL\"]"
stop_tgt "$TGT_PID" TERM
check "SIGTERM: exit 0" test $? -eq 0

start_tgt t0 -m 0x3 --json "$TMP/config.json" || not_ok "gga_tgt restarts from the saved config"
check "after the restart: registrant, holder, type and generation are back" \
	client ptpl-check --nsid 2
check "namespace 1 (no ptpl_file) forgot everything" client basic --nsid 1
stop_tgt "$TGT_PID" TERM
start_tgt t0 -m 0x3 --json "$TMP/config.json" || not_ok "gga_tgt restarts again"
check "with persistence turned off, nothing survives the next restart" \
	client ptpl-empty --nsid 2
stop_tgt "$TGT_PID" INT
check "SIGINT: exit 0" test $? -eq 0
finish
