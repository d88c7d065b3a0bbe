#!/usr/bin/env bash
# The gga topology (scripts/gga_topology.sh, file members over NVMe/TCP) when
# the front dies while a half-block target is down, and comes back before it:
#  1. set A written through the front; the bitmap clears (every member online);
#  2. target 1 SIGKILLed; set B written over many 1 MiB regions (degraded);
#  3. the front SIGKILLed with target 1 still down, then restarted from its
#     saved configuration: target 1's attach (retry_first_connect) answers
#     at once and keeps retrying, the array assembles degraded, data_2
#     absent, everything reads back, and set C is written (degraded);
#  4. target 1 restarted on its file (its own superblock still says it is in
#     sync), and nothing else done: the front's controller connects by itself,
#     the member is attached, and the freshest superblocks say it is stale, so
#     it is resynced over exactly the regions B and C touched, never trusted
#     as it is; online within 15 s;
#  5. target 0 SIGKILLed: every block of A, B and C reads back from data_2
#     and parity;
#  6. target 0 restarted: resynced, all three online.
source "$(dirname "$0")/common.sh"

D=$TMP/topo
source "$(dirname "$0")/topology_lib.sh"
A=0:512
B=2048:16384:64
# Regions 2..7: none of A's or B's.
C=600:2000:50

# The front's controller hb1 retries its first connect: attaching, refused.
hb1_retrying() {
	frpc bdev_nvme_get_controllers '{"name":"hb1"}' | python3 -c 'import json, sys
c = json.load(sys.stdin)[0]
print("hb1: %s, %s attempts, last error: %s" % (c["state"], c.get("connect_attempts"), c.get("last_error")))
sys.exit(0 if c["state"] == "attaching" and c["retry_first_connect"] is True and
         "refused" in c.get("last_error", "").lower() and c["namespaces"] == [] else 1)'
}

# The running front's save_config has hb1's attach, with retry_first_connect.
saved_with_retry() {
	frpc save_config | python3 -c 'import json, sys
for s in json.load(sys.stdin)["subsystems"]:
    for c in s["config"]:
        if c["method"] == "bdev_nvme_attach_controller" and c["params"]["name"] == "hb1":
            sys.exit(0 if c["params"].get("retry_first_connect") is True else 1)
sys.exit(1)'
}

topo up --size 64 >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up (exit $rc)" test $rc -eq 0

# 1. Set A, then the lazy clearing empties the bitmap.
check "set A written" blocks write 1 "$A"
check "bitmap cleared once every member is online" wait_info 15 'd[0]["bitmap"]["dirty"] == 0'

# 2. Target 1 down; set B over many regions.
topo kill-target 1 >/dev/null 2>&1
check "set B written with target 1 down" blocks write 2 "$B"
check "data_2 failed, array degraded" test "$(states)" = '["online", "failed", "online", "degraded"]'
nregions=$(python3 "$BLOCKS" regions --lbas "$B")
check "bitmap marks B's $nregions regions" test "$(gga_info 'd[0]["bitmap"]["dirty"]')" = "$nregions"

# 3. The front dies and comes back while target 1 is still down.
topo kill-target front >/dev/null 2>&1
topo start-target front >"$TMP/front2.out" 2>&1
rc=$?
track
check "front restarts with target 1 still down (exit $rc)" test $rc -eq 0
check "no call of its configuration failed" \
	bash -c "! grep -q 'calls failed and were skipped' '$D/front.log'"
check "target 1's controller is listed, attaching, with its connect error" hb1_retrying
check "save_config writes it, not connected, with retry_first_connect" saved_with_retry
check "its retries are logged" grep -q "nvme controller 'hb1': connect attempt 1 failed" "$D/front.log"
check "array assembled degraded, data_2 absent" \
	test "$(states)" = '["online", "absent", "online", "degraded"]'
check "set A reads back, degraded" blocks check 1 "$A"
check "set B reads back, degraded" blocks check 2 "$B"
check "set C written, degraded" blocks write 3 "$C"
nregions=$(($(python3 "$BLOCKS" regions --lbas "$B") + $(python3 "$BLOCKS" regions --lbas "$C")))

# 4. Target 1 back, nothing else done: the front attaches it by itself and resyncs it.
topo start-target 1 >/dev/null 2>&1
track
check "data_2 resynced and online within 15 s, by itself" \
	wait_info 15 'd[0]["state"] == "online" and d[0]["members"][1]["state"] == "online"'
check "target 1's controller connected" test "$(ctrlr_state hb1)" = connected
check "a resync, not a rebuild" test "$(gga_info 'd[0]["last_recovery"]["kind"]')" = resync
check "exactly B's and C's $nregions regions copied" \
	test "$(gga_info 'd[0]["last_recovery"]["regions"]')" = "$nregions"
check "the log says data_2 came back with its superblock, missed writes" \
	grep -q "member data_2 'hb1n1': .* -> stale (back with its superblock; missed writes)" "$D/front.log"
check "set A reads back with every member" blocks check 1 "$A"
check "set B reads back with every member" blocks check 2 "$B"
check "set C reads back with every member" blocks check 3 "$C"

# 5. A second loss: target 0.
topo kill-target 0 >/dev/null 2>&1
check "set A reads back from data_2 and parity" blocks check 1 "$A"
check "set B reads back from data_2 and parity" blocks check 2 "$B"
check "set C reads back from data_2 and parity" blocks check 3 "$C"
check "no request failed, no checksum failure" \
	test "$(gga_info 'd[0]["counters"]["failed_ios"] == 0 and d[0]["counters"]["checksum_failures"] == 0')" = true

# 6. Target 0 back: its controller reconnects, it is resynced.
topo start-target 0 >/dev/null 2>&1
check "data_1 resynced, all three online" wait_info 60 'd[0]["state"] == "online"'
check "set A, B and C read back with every member" \
	bash -c "python3 '$BLOCKS' check --config '$D/bdevperf.json' --seed 1 --lbas '$A' && python3 '$BLOCKS' check --config '$D/bdevperf.json' --seed 2 --lbas '$B' && python3 '$BLOCKS' check --config '$D/bdevperf.json' --seed 3 --lbas '$C'"

topo down >"$TMP/down.out" 2>&1
check "down: four daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" = 4
finish
