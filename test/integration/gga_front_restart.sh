#!/usr/bin/env bash
# The gga topology (scripts/gga_topology.sh, file members over NVMe/TCP) when
# the front dies while a half-block target is down, and comes back before it:
#  1. set A written through the front; the bitmap clears (every member online);
#  2. target 1 SIGKILLed; set B written over many 1 MiB regions (degraded);
#  3. the front SIGKILLed with target 1 still down, then restarted from its
#     saved configuration: target 1's attach fails, the array assembles
#     degraded, data_2 absent, and everything reads back;
#  4. target 1 restarted on its file (its own superblock still says it is in
#     sync) and attached again on the front: the freshest superblocks say it
#     is stale, so it is resynced over exactly the regions B touched, never
#     trusted as it is; then online;
#  5. target 0 SIGKILLed: every block of A and B reads back from data_2 and
#     parity;
#  6. target 0 restarted: resynced, all three online.
source "$(dirname "$0")/common.sh"

D=$TMP/topo
source "$(dirname "$0")/topology_lib.sh"
A=0:512
B=2048:16384:64

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
check "its failed attach is logged and skipped" \
	grep -q 'calls failed and were skipped' "$D/front.log"
check "array assembled degraded, data_2 absent" \
	test "$(states)" = '["online", "absent", "online", "degraded"]'
check "set A reads back, degraded" blocks check 1 "$A"
check "set B reads back, degraded" blocks check 2 "$B"

# 4. Target 1 back, attached again: resynced over B's regions only.
topo start-target 1 >/dev/null 2>&1
hb1=$(python3 -c 'import json,sys
for s in json.load(open(sys.argv[1]))["subsystems"]:
    for c in s["config"]:
        if c["method"] == "bdev_nvme_attach_controller" and c["params"]["name"] == "hb1":
            print(json.dumps(c["params"]))' "$D/front.json")
check "target 1 attached again on the front" frpc bdev_nvme_attach_controller "$hb1"
check "data_2 never online before its resync: stale or rebuilding first" \
	wait_info 10 'd[0]["members"][1]["state"] in ("stale", "rebuilding") or (d[0]["last_recovery"] is not None and d[0]["last_recovery"]["kind"] == "resync")'
check "data_2 resynced and online" wait_info 60 'd[0]["state"] == "online"'
check "a resync, not a rebuild" test "$(gga_info 'd[0]["last_recovery"]["kind"]')" = resync
check "exactly B's $nregions regions copied" \
	test "$(gga_info 'd[0]["last_recovery"]["regions"]')" = "$nregions"
check "the log says data_2 came back with its superblock, missed writes" \
	grep -q "member data_2 'hb1n1': .* -> stale (back with its superblock; missed writes)" "$D/front.log"

# 5. A second loss: target 0.
topo kill-target 0 >/dev/null 2>&1
check "set A reads back from data_2 and parity" blocks check 1 "$A"
check "set B reads back from data_2 and parity" blocks check 2 "$B"
check "no request failed, no checksum failure" \
	test "$(gga_info 'd[0]["counters"]["failed_ios"] == 0 and d[0]["counters"]["checksum_failures"] == 0')" = true

# 6. Target 0 back: its controller reconnects, it is resynced.
topo start-target 0 >/dev/null 2>&1
check "data_1 resynced, all three online" wait_info 60 'd[0]["state"] == "online"'
check "set A and B read back with every member" \
	bash -c "python3 '$BLOCKS' check --config '$D/bdevperf.json' --seed 1 --lbas '$A' && python3 '$BLOCKS' check --config '$D/bdevperf.json' --seed 2 --lbas '$B'"

topo down >"$TMP/down.out" 2>&1
check "down: four daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" = 4
finish
