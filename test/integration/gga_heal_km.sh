#!/usr/bin/env bash
# A 4 + 2 gga array over six half-block targets (scripts/gga_topology.sh
# --layout 4+2: file members of 1 KiB blocks over NVMe/TCP, cauchy matrix):
# a bdevperf verify run survives two targets SIGKILLed in its middle with no
# mismatch; set A, written then with two members gone, reads back; both
# targets restarted are resynced and the array is online again; then two
# other targets killed: A still reads back, from the resynced members.
source "$(dirname "$0")/common.sh"

BP=$BIN/bdevperf
D=$TMP/topo
source "$(dirname "$0")/topology_lib.sh"
A=0:4096:16

TOPO_TIMEOUT=120 topo up --layout 4+2 --size 16 >"$TMP/up.out" 2>&1
rc=$?
for n in 3 4 5; do
	[ -s "$D/hb$n.pid" ] && PIDS+=("$(cat "$D/hb$n.pid")")
done
track
check "4 + 2 topology up (exit $rc)" test $rc -eq 0
check "gga0 is 4 + 2, cauchy, six members online" \
	test "$(gga_info '[d[0]["k"], d[0]["m"], d[0]["matrix_type"], d[0]["state"], len(d[0]["members"])]')" = '[4, 2, "cauchy", "online", 6]'
timeout -k 5 120 "$BP" --json "$D/bdevperf.json" -m 0x2 -q 16 -o 4096 -w verify -t 8 \
	>"$TMP/verify.out" 2>&1 &
bp_pid=$!
PIDS+=("$bp_pid")
sleep 3
topo kill-target 1 >/dev/null 2>&1
sleep 1
topo kill-target 4 >/dev/null 2>&1
wait "$bp_pid"
rc=$?
check "verify with two targets killed in its middle: exit 0 (rc $rc)" test $rc -eq 0
check "verify: 0 mismatches" no_mismatch "$TMP/verify.out"
check "data_2 and parity_1 failed, array degraded" \
	test "$(gga_info '[d[0]["members"][1]["state"], d[0]["members"][4]["state"], d[0]["state"]]')" = '["failed", "failed", "degraded"]'
# (bdevperf's verify writes all over the bdev: A is written after it.)
check "set A written with two members gone" blocks write 1 "$A"
check "set A reads back with two members gone" blocks check 1 "$A"

topo start-target 1 >/dev/null 2>&1
topo start-target 4 >/dev/null 2>&1
check "both back and resynced, array online" wait_info 90 'd[0]["state"] == "online"'
check "data_2 resynced" grep -q "member data_2 'hb1n1': rebuilding -> online (resynced)" "$D/front.log"
check "parity_1 resynced" grep -q "member parity_1 'hb4n1': rebuilding -> online (resynced)" "$D/front.log"

topo kill-target 0 >/dev/null 2>&1
topo kill-target 5 >/dev/null 2>&1
check "two other targets killed: set A reads back from the resynced members" blocks check 1 "$A"
check "no request failed" test "$(gga_info 'd[0]["counters"]["failed_ios"]')" = 0

TOPO_TIMEOUT=120 topo down >"$TMP/down.out" 2>&1
check "down: the daemons still running exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" = 5
finish
