#!/usr/bin/env bash
# Issue 32, case 6: a member lost during a takeover. Two fronts
# (scripts/gga_topology.sh --fronts 2, lease 1000 ms, member_timeout_ms
# 1000; file members over NVMe/TCP) hold the members through NVMe
# reservations; two members in sync (k = 2) are enough to serve.
#  1. set A written through front, the active one;
#  2. a member whose superblock read fails at the takeover: front SIGKILLed,
#     target 0's file cut short (its reservations still answer). front2
#     takes all three members; reading data_1's superblock fails. On the old
#     build (before 6aca4e5) that failed the whole assembly, nothing tried
#     it again, and front2 held the members without serving for good. Now
#     data_1 is left out, front2 serves with the two others, A reads back,
#     B is written; the file restored, data_1 is probed and resynced;
#  3. a member that stalls as the takeover starts: front restarted (it
#     stands by), target 1 SIGSTOPped, then front2 SIGKILLed. front serves
#     with data_1 and parity, A and B read back, C is written; target 1
#     SIGCONTed: taken, resynced, all online;
#  4. (builds with test hooks, CONFIG_TEST_HOOKS=y: the ASan build) a member
#     lost right after the new active took it: front2 restarted (standby)
#     and told (test_gga_assembly_delay) to wait 1.5 s between taking the
#     members and reading their superblocks; front SIGKILLed; in that
#     window the highest-numbered member front2 holds (parity, when it
#     took all three) is SIGSTOPped. Its superblock read stalls: after member_timeout_ms
#     (not the NVMe command timeout) it is reset and left out, front2
#     serves with the two others, A and C read back, E is written; the
#     target SIGCONTed: taken back, resynced, all online, B and E read back.
#     (When front2 held only two at the take, the third a poll later, the
#     first assembly is refused for want of k and the retry, 100 ms later,
#     assembles with the two that answer.)
#     On the old build with the hook added, front2 held the three members
#     and never served: its assembly failed 12 s later, for good.
# Every takeover must end serving within 15 s (the lease, the hook's wait,
# member_timeout_ms; the old assembly waited on a stalled read until the
# NVMe host gave up on it, then stopped); every block reads back with the
# member lost and after it is back.
# make test's normal lane runs parts 1-3 (its build has no hooks); its ASan
# lane (hooks) parts 1 and 4 only, B and C then written through front;
# make torture (GGA_TORTURE=1) all four under ASan.
source "$(dirname "$0")/common.sh"

command -v python3 >/dev/null || skip "python3 is needed (gga_blocks.py)"
ALL=1
if [ "${GGA_LANE:-normal}" = asan ] && [ -z "${GGA_TORTURE:-}" ]; then
	ALL=0
fi

D=$TMP/topo
source "$(dirname "$0")/topology_lib.sh"
# A target left SIGSTOPped by a failed check is woken first, so that the
# topology's down stops it at once.
wake_targets() {
	local n
	for n in hb0 hb1 hb2; do
		[ -s "$D/$n.pid" ] && kill -CONT "$(cat "$D/$n.pid")" 2>/dev/null
	done
	return 0
}
trap 'trap "" INT TERM; wake_targets; topo down >/dev/null 2>&1; cleanup' EXIT
LEASE=1000
TIMEOUT_MS=1000
A=0:512:4
B=1:512:4
C=2:512:4
E=3:512:4

# rpc_of NAME METHOD [JSON]: gga_rpc to a topology daemon, bounded.
rpc_of() {
	"$BIN/gga_rpc" -s "$D/$1.sock" -t 5 "${@:2}"
}

# info_of NAME EXPR: EXPR on NAME's gga0 info (d, the list it answers).
info_of() {
	rpc_of "$1" bdev_gga_get_info '{"name":"gga0"}' 2>/dev/null | python3 -c 'import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    sys.exit("no answer")
print(json.dumps(eval(sys.argv[1])))' "$2"
}

# wait_on NAME SECONDS EXPR: until EXPR on NAME's gga0 info is true, within SECONDS.
wait_on() {
	local end=$((SECONDS + $2))
	while [ $SECONDS -lt $end ]; do
		[ "$(info_of "$1" "$3")" = true ] && return 0
		sleep 0.1
	done
	echo "# waited $2 s on $1 for: $3"
	echo "#   front: $(info_of "$1" 'd[0]["front"]')"
	echo "#   states: $(info_of "$1" '[d[0]["state"]] + [[m["state"], m.get("reason")] for m in d[0]["members"]]')"
	return 1
}

# path_of NAME: NAME's attachment in bdevperf.json (gga_blocks.py --path).
path_of() { [ "$1" = front ] && echo 0 || echo 1; }

# via NAME write|check SEED LBAS: known blocks through NAME only, bounded.
via() {
	timeout -k 5 60 python3 "$BLOCKS" "$2" --config "$D/bdevperf.json" --path "$(path_of "$1")" \
		--seed "$3" --lbas "$4" >"$TMP/via.out" 2>&1
	local rc=$?
	sed 's/^/# /' "$TMP/via.out"
	return $rc
}

SERVES='d[0]["front"]["role"] == "active" and d[0]["front"]["serving"]'
ALL_ONLINE='d[0]["state"] == "online" and d[0]["front"]["members_held"] == 3 and all(m["state"] == "online" for m in d[0]["members"])'

# set_timeout NAME: member_timeout_ms TIMEOUT_MS on NAME (a restarted front
# replays the configuration saved at up).
set_timeout() {
	rpc_of "$1" bdev_gga_set_options "{\"name\":\"gga0\",\"member_timeout_ms\":$TIMEOUT_MS}" >/dev/null
}

# restart_standby NAME: NAME restarted from its saved configuration, standing by.
restart_standby() {
	topo start-target "$1" >"$TMP/start.out" 2>&1
	local rc=$?
	track
	check "$1 restarted (exit $rc)" test $rc -eq 0
	set_timeout "$1"
	check "$1 stands by" wait_on "$1" 10 'd[0]["front"]["role"] == "standby"'
}

# took_over NEW T0: NEW serves within 15 s of T0 (ns); prints how long it took.
took_over() {
	local new=$1 t0=$2 ms
	if wait_on "$new" 15 "$SERVES"; then
		ms=$((($(date +%s%N) - t0) / 1000000))
		echo "# $new serving ${ms} ms after the old active's SIGKILL (lease $LEASE ms, member_timeout_ms $TIMEOUT_MS)"
		return 0
	fi
	return 1
}

# degraded NEW IDX: NEW's array degraded, member IDX out, the two others online.
degraded() {
	local want
	want=$(python3 -c "import json; s = [True] * 3; s[$2] = False; print(json.dumps(['degraded'] + s))")
	test "$(info_of "$1" "[d[0]['state']] + [m['state'] == 'online' for m in d[0]['members']]")" = "$want"
}

member_state() {
	info_of "$1" "[d[0]['members'][$2]['state'], d[0]['members'][$2].get('reason')]"
}

topo up --fronts 2 --size 16 --lease-ms $LEASE >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up with two fronts, lease $LEASE ms (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || {
	cat "$TMP/up.out"
	finish
}
set_timeout front
set_timeout front2
check "member_timeout_ms $TIMEOUT_MS on front2" \
	test "$(info_of front2 'd[0]["member_timeout_ms"]')" = $TIMEOUT_MS
check "front serves, front2 stands by" \
	test "$(info_of front 'd[0]["front"]["serving"]'),$(info_of front2 'd[0]["front"]["role"]')" = 'true,"standby"'

# 1.
check "set A written through front" via front write 1 "$A"

if [ $ALL = 1 ]; then
	# 2. A superblock read that fails at the takeover.
	kill -KILL "$(cat "$D/front.pid")"
	t0=$(date +%s%N)
	cp "$D/hb0.img" "$TMP/hb0.saved"
	truncate -s 4096 "$D/hb0.img"
	check "2: front2 takes over and serves though data_1's superblock read fails" took_over front2 "$t0"
	check "2: front2 holds the three members" test "$(info_of front2 'd[0]["front"]["members_held"]')" = 3
	check "2: the array degraded, data_1 left out" degraded front2 0
	echo "# data_1: $(member_state front2 0)"
	check "2: set A reads back through front2" via front2 check 1 "$A"
	check "2: set B written through front2" via front2 write 2 "$B"
	dd if="$TMP/hb0.saved" of="$D/hb0.img" bs=1M conv=notrunc status=none
	rm -f "$TMP/hb0.saved"
	check "2: data_1 readable again: probed, resynced, all three online" \
		wait_on front2 20 "$ALL_ONLINE"
	check "2: set A reads back with every member" via front2 check 1 "$A"
	check "2: set B reads back with every member" via front2 check 2 "$B"

	# 3. A member that stalls as the takeover starts.
	restart_standby front
	hb1=$(cat "$D/hb1.pid")
	kill -STOP "$hb1"
	kill -KILL "$(cat "$D/front2.pid")"
	t0=$(date +%s%N)
	check "3: front takes over and serves with target 1 stopped" took_over front "$t0"
	check "3: the array degraded, data_2 out" degraded front 1
	echo "# data_2: $(member_state front 1)"
	check "3: set A reads back through front" via front check 1 "$A"
	check "3: set B reads back through front" via front check 2 "$B"
	check "3: set C written through front" via front write 3 "$C"
	kill -CONT "$hb1"
	check "3: target 1 back: data_2 taken, resynced, all three online" wait_on front 20 "$ALL_ONLINE"
	check "3: set C reads back with every member" via front check 3 "$C"
	restart_standby front2
else
	echo "# parts 2 and 3 run in the normal lane (under ASan in make torture)"
	check "set B written through front" via front write 2 "$B"
	check "set C written through front" via front write 3 "$C"
fi

# 4. A member lost right after the new active took it (test hook).
if ! rpc_of front2 test_gga_assembly_delay '{"name":"gga0","ms":1500}' >/dev/null 2>&1; then
	echo "# this build has no test hooks (CONFIG_TEST_HOOKS=y): the member lost right after" \
		"the takeover (part 4) runs in builds with them (make test's ASan lane, make torture)"
else
	ok "4: front2's next assembly waits 1.5 s after taking the members (test hook)"
	off=$(stat -c %s "$D/front2.log")
	kill -KILL "$(cat "$D/front.pid")"
	t0=$(date +%s%N)
	# The members front2 held when it turned active (at least two: the
	# quorum; the third may be taken a poll later): the last of them is lost.
	held=
	end=$((SECONDS + 10))
	while [ $SECONDS -lt $end ]; do
		held=$(tail -c +$((off + 1)) "$D/front2.log" |
			sed -n 's/.*test hook: front holds members 0x\([0-7]\);.*/\1/p' | head -n 1)
		[ -n "$held" ] && break
		sleep 0.05
	done
	lost=
	for i in 0 1 2; do
		[ -n "$held" ] && [ $((held >> i & 1)) = 1 ] && lost=$i
	done
	check "4: front2 took at least two members and waits before reading them (mask ${held:-none})" \
		test -n "$lost"
	lost=${lost:-2}
	role=$(python3 -c "print(['data_1', 'data_2', 'parity'][$lost])")
	lost_pid=$(cat "$D/hb$lost.pid")
	kill -STOP "$lost_pid"
	echo "# front2 held members 0x$held when it turned active; target $lost ($role) SIGSTOPped"
	check "4: front2 serves without $role, which it had taken" took_over front2 "$t0"
	check "4: the array degraded, $role left out" degraded front2 "$lost"
	echo "# $role: $(member_state front2 "$lost")"
	check "4: front2's log: $role's stalled superblock read was reset after member_timeout_ms" \
		grep -q "has not answered the assembly's superblock I/O for $TIMEOUT_MS ms" "$D/front2.log"
	check "4: set A reads back through front2" via front2 check 1 "$A"
	check "4: set C reads back through front2" via front2 check 3 "$C"
	check "4: set E written through front2" via front2 write 4 "$E"
	kill -CONT "$lost_pid"
	check "4: target $lost back: $role taken, resynced, all three online" \
		wait_on front2 20 "$ALL_ONLINE"
	check "4: set B reads back with every member" via front2 check 2 "$B"
	check "4: set E reads back with every member" via front2 check 4 "$E"
fi

topo down >"$TMP/down.out" 2>&1
check "down: the daemons left exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" -ge 4
finish
