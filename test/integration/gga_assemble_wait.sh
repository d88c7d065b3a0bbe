#!/usr/bin/env bash
# Issue 32, case 4: the front (scripts/gga_topology.sh, file members over
# NVMe/TCP) restarts while two of its three half-block targets are down.
#  1. set A written through the front;
#  2. the front, then targets 1 and 2 SIGKILLed;
#  3. the front restarted from its saved configuration: bdev_gga_create
#     (saved with wait_for_members) registers gga0 although only data_1
#     answers; it says it waits for members, and every request fails;
#     the RPCs that change the array are refused and say why;
#     a SIGTERM then is tidy; target 0 SIGKILLed too, the front restarted
#     with every target down registers gga0 from the geometry its saved
#     configuration records, and waits; target 0 back: it waits on, data_1
#     taken;
#  4. targets 1 and 2 restarted at once, nothing else done: gga0 assembles
#     by itself, every member comes back, set A reads back.
# On main the create failed at start-up ("fewer than 2 members do") and
# gga0 never appeared; with every target down the create failed ("no
# member's base bdev exists").
source "$(dirname "$0")/common.sh"

D=$TMP/topo
source "$(dirname "$0")/topology_lib.sh"
A=0:512

# The saved configuration's bdev_gga_create says wait_for_members.
saved_waits() {
	python3 -c 'import json, sys
for s in json.load(open(sys.argv[1]))["subsystems"]:
    for c in s["config"] or []:
        if c["method"] == "bdev_gga_create":
            p = c["params"]
            sys.exit(0 if p.get("wait_for_members") is True and
                     p.get("member_block_size", 0) > 0 and
                     p.get("member_num_blocks", 0) > 0 else 1)
sys.exit(1)' "$D/front.json"
}

topo up --size 16 >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$TMP/up.out"

check "set A written" blocks write 1 "$A"
check "save_config saved bdev_gga_create with wait_for_members and the geometry" saved_waits

# 2. Front and two targets down.
topo kill-target front >/dev/null 2>&1
topo kill-target 1 >/dev/null 2>&1
topo kill-target 2 >/dev/null 2>&1

# 3. The front comes back first.
topo start-target front >"$TMP/front2.out" 2>&1
rc=$?
track
check "front restarts with targets 1 and 2 down (exit $rc)" test $rc -eq 0
check "no call of its configuration failed" \
	bash -c "! grep -q 'calls failed and were skipped' '$D/front.log'"
check "gga0 registered, failed, waiting for members" \
	wait_info 5 'd[0]["state"] == "failed" and d[0]["assembly"]["state"] == "waiting_for_members"'
check "data_1 waits, data_2 and parity absent" \
	test "$(gga_info '[m["state"] for m in d[0]["members"]]')" = '["stale", "absent", "absent"]'
check "a read fails while it waits" bash -c "! timeout -k 5 60 python3 '$BLOCKS' check \
	--config '$D/bdevperf.json' --seed 1 --lbas 0:8 >'$TMP/fail.out' 2>&1"

# The RPCs that change the array refuse while it waits, saying why (EAGAIN),
# rather than with words of an assembled array (before: "fewer than k members
# are online", "not faulted").
refused() {
	if frpc "$@" >"$TMP/refused.out" 2>&1 ||
		! grep -q "^error -11: gga bdev 'gga0' is not assembled: waiting for members" \
			"$TMP/refused.out"; then
		cat "$TMP/refused.out"
		return 1
	fi
}
check "waiting: a scrub start is refused, saying why" \
	refused bdev_gga_scrub '{"name":"gga0","action":"start"}'
check "waiting: a replace is refused, saying why" \
	refused bdev_gga_replace_member '{"name":"gga0","member":"parity","new_base":"none"}'
check "waiting: a clear is refused, saying why" \
	refused bdev_gga_clear_member '{"name":"gga0","member":"data_2"}'

# A SIGTERM while it waits is tidy (the waiting ends, the members are
# released, exit 0). Then every target is down (a power cut where the front
# boots first): restarted, it registers gga0 from the saved geometry and
# waits; target 0 back, it waits on with data_1 taken.
topo stop-target front >"$TMP/stop.out" 2>&1
check "SIGTERM while waiting: the front exits 0" grep -q "exit 0)" "$TMP/stop.out"
topo kill-target 0 >/dev/null 2>&1
topo start-target front >"$TMP/front3.out" 2>&1
rc=$?
track
check "front restarts with every target down (exit $rc)" test $rc -eq 0
check "no member at all: gga0 registered and waiting" \
	wait_info 5 'd[0]["state"] == "failed" and "no member" in d[0]["assembly"]["reason"]'
check "every member absent" \
	test "$(gga_info '[m["state"] for m in d[0]["members"]]')" = '["absent", "absent", "absent"]'
topo start-target 0 >/dev/null 2>&1
track
check "target 0 back: gga0 waits on, data_1 taken" \
	wait_info 20 'd[0]["assembly"]["state"] == "waiting_for_members" and d[0]["members"][0]["state"] == "stale"'

# 4. Both targets back at once; nothing else is done.
topo start-target 1 >/dev/null 2>&1 &
s1=$!
topo start-target 2 >/dev/null 2>&1
wait "$s1"
track
check "gga0 assembled by itself within 20 s" \
	wait_info 20 '"assembly" not in d[0] and d[0]["state"] != "failed"'
check "every member online within 20 s" wait_info 20 'd[0]["state"] == "online"'
check "the log says it assembled once enough members answered" \
	grep -q "gga bdev 'gga0': assembled array .* once enough members answered" "$D/front.log"
check "set A reads back" blocks check 1 "$A"

topo down >"$TMP/down.out" 2>&1
check "down: four daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" = 4
finish
