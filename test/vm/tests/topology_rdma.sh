#!/usr/bin/env bash
# The three-target topology (scripts/gga_topology.sh --trtype rdma) inside the
# test VM over SoftRoCE: three half-block gga_tgt targets and the front on
# 10.99.0.1, the front attached to them over NVMe/RDMA and exporting gga0
# over NVMe/RDMA, bdevperf attached to the front over NVMe/RDMA. The same
# assertions as test/integration/topology.sh (a) and (b): verify end to end;
# one half-block target SIGKILLed mid-run → zero verify failures, the member
# failed and the array degraded; restarted → the front reconnects and verify
# passes again. Runs are short: the guest is emulated (TCG).
source "$(dirname "$0")/../../integration/common.sh"
source "$GGA_ROOT/test/vm/guest_lib.sh"

BP=$BIN/bdevperf
D=$TMP/topo
TOPO_TIMEOUT=120
source "$GGA_ROOT/test/integration/topology_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/vm_run.sh)"
[ -x "$BP" ] || skip "$BP is not built"
vm_rxe_setup || skip "SoftRoCE (rdma_rxe) is not available in this guest"

bp() {
	local name=$1
	shift
	timeout -k 5 120 "$BP" --json "$D/bdevperf.json" -m 0x2 --mem-size 64m -q 8 -o 4096 "$@" \
		>"$TMP/$name.out" 2>&1
}

# --- (a) up over RDMA, verify end to end ---
topo up --size 16 --trtype rdma --traddr "$VM_RDMA_ADDR" >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up over RDMA on $VM_RDMA_ADDR (exit $rc)" test $rc -eq 0
if [ $rc -ne 0 ]; then
	cat "$TMP/up.out"
	tail -n 20 "$D"/*.log
	finish
fi
check "up prints the front's RDMA address and NQN" \
	grep -q "nqn.2016-06.io.gga:gga0 on $VM_RDMA_ADDR:[0-9]* (NVMe/RDMA)" "$TMP/up.out"
check "bdevperf.json attaches over rdma" grep -q '"trtype":"rdma"' "$D/bdevperf.json"
frpc bdev_nvme_get_controllers >"$TMP/ctrlrs.out"
check "the front's three controllers are RDMA and connected" \
	test "$(jget "$TMP/ctrlrs.out" 'sum(1 for c in d if c["state"] == "connected" and "RDMA" in json.dumps(c))')" = 3
status_ok() {
	topo status >"$TMP/status.out" &&
		[ "$(grep -c ': running' "$TMP/status.out")" = 4 ] &&
		[ "$(grep -c ' connected$' "$TMP/status.out")" = 3 ] &&
		grep -q 'gga0 online' "$TMP/status.out"
}
check "status: four daemons, three controllers connected, gga0 online" status_ok
bp verify -w verify -t 2
check "(a) verify through the front over NVMe/RDMA: exit 0" test $? -eq 0
check "(a) verify: blocks compared, 0 mismatches" no_mismatch "$TMP/verify.out"

# --- (b) one half-block target SIGKILLed mid-run ---
bp kill1 -w verify -t 10 &
bpp=$!
# Start-up is slow in an emulated guest: kill once I/O has been running a while.
for i in $(seq 1 300); do
	grep -q 'Running I/O' "$TMP/kill1.out" 2>/dev/null && break
	sleep 0.1
done
sleep 3
topo kill-target 1 >/dev/null
wait $bpp
rc=$?
check "(b) hb1 killed mid-run: bdevperf exit 0 (rc $rc)" test $rc -eq 0
check "(b) 0 mismatches, no failed I/O" \
	bash -c "grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$TMP/kill1.out' &&
		! grep -q 'run failed' '$TMP/kill1.out'"
check "(b) bdev_gga_get_info: data_2 failed, array degraded" \
	test "$(gga_info '[m["state"] for m in d[0]["members"]] + [d[0]["state"]]')" \
	= '["online", "failed", "online", "degraded"]'
topo start-target 1 >/dev/null
rc=$?
track
check "(b) hb1 restarts on its file and port" test $rc -eq 0
check "(b) the front's controller hb1 is connected again over RDMA" wait_connected hb1 30
bp after1 -w verify -t 2
check "(b) verify after the restart: exit 0" test $? -eq 0
check "(b) verify after the restart: 0 mismatches" no_mismatch "$TMP/after1.out"
if [ "$N_FAIL" -ne 0 ]; then
	tail -n 20 "$TMP"/*.out; grep -v "^$" "$D/front.log" | tail -n 40
fi

topo down >"$TMP/down.out"
check "down: four daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" = 4
finish
