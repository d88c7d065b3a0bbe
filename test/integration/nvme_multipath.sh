#!/usr/bin/env bash
# Host multipath in gga's NVMe bdev against one gga_tgt that exports a
# namespace on two listeners with ANA: a second attach of a name adds a
# path (and its refusals); bdevperf verify runs while the paths change
# under it (ANA failover with a moment when no path is usable, a path's
# listener removed and added back) with no I/O error; with the paths
# unusable longer than fast_io_fail_timeout_sec, I/O fails within the bound.
source "$(dirname "$0")/common.sh"

NQN=nqn.2016-06.io.gga:mp1
PA=$(free_port)
PB=$(free_port)
BP=$BIN/bdevperf

addr() {
	printf '{"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1", "trsvcid": "%s"}' "$1"
}
attach() { # NAME PORT [extra JSON members]
	printf '{"name":"%s","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s","subnqn":"%s"%s}' \
		"$1" "$2" "${NQN}" "${3:+,$3}"
}
ana() { # PORT STATE
	rpc t0 nvmf_subsystem_listener_set_ana_state --nqn $NQN --ana_state "$2" \
		--listen_address "$(addr "$1")" >/dev/null
}
# paths SOCK NAME: each path's port and its namespace's ANA state, as the host sees them.
paths() {
	rpc "$1" bdev_nvme_get_controllers --name "$2" |
		jget - '[(p["trid"]["trsvcid"], p["state"], p["ana_states"][0]["ana_state"]) for p in d[0]["paths"]]'
}
wait_paths() { # SOCK NAME EXPECTED
	local i
	for i in $(seq 1 50); do
		[ "$(paths "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	echo "  paths: $(paths "$1" "$2"), expected $3"
	return 1
}

start_tgt t0 -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
rpc t0 bdev_malloc_create --name M0 --num_blocks 16384 --block_size 512 >/dev/null
rpc t0 nvmf_create_transport --trtype TCP >/dev/null
rpc t0 nvmf_create_subsystem --nqn $NQN --allow_any_host true --ana_reporting true \
	--max_namespaces 2 >/dev/null
rpc t0 nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M0\"}}" >/dev/null
rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA")}" >/dev/null
rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PB"), \"ana_state\": \"inaccessible\"}" >/dev/null
T0=$TGT_PID

# --- The RPCs, from a gga_tgt as host ---
start_tgt h -m 0x2 || {
	not_ok "host gga_tgt starts"
	finish
}
check "attach N1 through listener A" rpc h bdev_nvme_attach_controller "$(attach N1 "$PA")"
check_fails "the same path again" rpc h bdev_nvme_attach_controller "$(attach N1 "$PA")"
check_fails "a path to another subsystem NQN" rpc h bdev_nvme_attach_controller \
	"$(attach N1 "$PB" | sed 's/mp1/other/')"
check_fails "a path with multipath disable" rpc h bdev_nvme_attach_controller \
	"$(attach N1 "$PB" '"multipath":"disable"')"
check_fails "a path with another host NQN" rpc h bdev_nvme_attach_controller \
	"$(attach N1 "$PB" '"hostnqn":"nqn.2014-08.io.gga:other"')"
check_fails "multipath: an unknown mode" rpc h bdev_nvme_attach_controller \
	"$(attach N2 "$PB" '"multipath":"sideways"')"
check "attach N1 through listener B: a second path, the same bdev" \
	test "$(rpc h bdev_nvme_attach_controller "$(attach N1 "$PB")" | jget - 'd')" = '["N1n1"]'
check "two paths: A optimized, B inaccessible (the ANA log of each)" \
	wait_paths h N1 "[[\"$PA\", \"connected\", \"optimized\"], [\"$PB\", \"connected\", \"inaccessible\"]]"
check "one bdev N1n1" test "$(rpc h bdev_get_bdevs | jget - '[b["name"] for b in d if b["name"].startswith("N1")]')" = '["N1n1"]'
rpc h save_config >"$TMP/h.json"
check "save_config: one attach per path" \
	test "$(jget "$TMP/h.json" '[(c["params"]["name"], c["params"]["trsvcid"], c["params"]["multipath"]) for s in d["subsystems"] if s["subsystem"] == "bdev" for c in s["config"] if c["method"] == "bdev_nvme_attach_controller"]')" = \
	"[[\"N1\", \"$PA\", \"multipath\"], [\"N1\", \"$PB\", \"multipath\"]]"
check "detach N1: every path goes" rpc h bdev_nvme_detach_controller --name N1
check "nothing left" test "$(rpc h bdev_nvme_get_controllers | jget - 'len(d)')" = 0
stop_tgt "$TGT_PID" TERM
check "host gga_tgt: SIGTERM, exit 0" test $? -eq 0

# --- bdevperf verify while the paths change ---
write_config "$TMP/bp.json" "{\"method\":\"bdev_nvme_attach_controller\",\"params\":$(attach N0 "$PA" '"fast_io_fail_timeout_sec":5')}" \
	"{\"method\":\"bdev_nvme_attach_controller\",\"params\":$(attach N0 "$PB" '"fast_io_fail_timeout_sec":5')}"
timeout -k 5 60 "$BP" -m 0x2 -r "$TMP/bp.sock" --json "$TMP/bp.json" -w verify -q 16 -o 4096 \
	-t 14 -S 2 -b N0n1 >"$TMP/bp.out" 2>&1 &
BPID=$!
PIDS+=("$BPID")
for i in $(seq 1 50); do [ -S "$TMP/bp.sock" ] && break; sleep 0.1; done
check "bdevperf: two paths, A optimized" \
	wait_paths bp N0 "[[\"$PA\", \"connected\", \"optimized\"], [\"$PB\", \"connected\", \"inaccessible\"]]"
sleep 1
# ANA failover: A inaccessible first, then B optimized (between the two, no path is usable).
ana "$PA" inaccessible
sleep 0.5
ana "$PB" optimized
check "after the ANA failover the host sees B optimized, A inaccessible" \
	wait_paths bp N0 "[[\"$PA\", \"connected\", \"inaccessible\"], [\"$PB\", \"connected\", \"optimized\"]]"
sleep 1
# B's listener goes (its connections close), while A is still inaccessible: held, then A.
rpc t0 nvmf_subsystem_remove_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PB")}" >/dev/null
sleep 0.5
ana "$PA" optimized
sleep 2
rpc t0 nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PB"), \"ana_state\": \"non_optimized\"}" >/dev/null
check "B is back (reconnected, non-optimized)" \
	wait_paths bp N0 "[[\"$PA\", \"connected\", \"optimized\"], [\"$PB\", \"connected\", \"non_optimized\"]]"
wait "$BPID"
rc=$?
check "bdevperf exits 0 (no I/O error through the failovers)" test $rc -eq 0
check "every block it read back was verified" verified "$TMP/bp.out"
check "the host logged the lost path and went on by the other" \
	grep -q "is lost; I/O goes by the other paths" "$TMP/bp.out"
[ $rc -eq 0 ] || tail -20 "$TMP/bp.out"

# --- The bound: no usable path for longer than fast_io_fail_timeout_sec ---
write_config "$TMP/bp2.json" "{\"method\":\"bdev_nvme_attach_controller\",\"params\":$(attach N0 "$PA" '"fast_io_fail_timeout_sec":1')}" \
	"{\"method\":\"bdev_nvme_attach_controller\",\"params\":$(attach N0 "$PB" '"fast_io_fail_timeout_sec":1')}"
timeout -k 5 60 "$BP" -m 0x2 --json "$TMP/bp2.json" -w write -q 4 -o 4096 -t 5 -b N0n1 \
	>"$TMP/bp2.out" 2>&1 &
BPID=$!
PIDS+=("$BPID")
sleep 1.5
ana "$PA" inaccessible
ana "$PB" inaccessible
start=$(date +%s%N)
wait "$BPID"
rc=$?
check "with every path inaccessible for good, I/O fails (bdevperf exits non-zero)" test $rc -ne 0
check "bdevperf reports failed I/O" grep -qiE "fail|error" "$TMP/bp2.out"
ana "$PA" optimized
check "gga_tgt is still serving" rpc t0 nvmf_get_subsystems --nqn $NQN
stop_tgt "$T0" INT
check "SIGINT: exit 0" test $? -eq 0
finish
