#!/usr/bin/env bash
# Two fronts for one gga bdev (docs/DESIGN.md section 1): the topology with
# --fronts 2 (three file-backed half-block targets; front, the active one, and
# front2, the standby, each holding the members through NVMe reservations).
#  1. front active and serving, front2 standby: its namespace serves nothing;
#  2. front SIGKILLed under bdevperf (gga's multipath host, verify): 0 failed
#     I/Os, 0 mismatches; front2 takes over; the stall is printed;
#  3. front restarted from its configuration: it stays standby while front2
#     renews its lease;
#  4. split brain: front2 SIGSTOPped past its lease, front takes over and
#     writes; front2 SIGCONTed: a write through it right away is refused
#     (fenced at the members), it steps down, lets go of its assembly and
#     stands by again by itself, and every block holds front's data;
#  5. planned hand-over back to front2, no lease to wait out, and no
#     restart: front, having handed over, stands by again;
#  6. a failover while a half-block target is down: the array changes hands
#     degraded, and the member is taken and resynced when it is back;
#  7. a takeover while a rebuild runs under I/O: the new active resumes the
#     rebuild from the checkpoint the old one persisted, and bdevperf (both
#     paths) sees no failed I/O and no mismatch.
source "$(dirname "$0")/common.sh"

# make test's ASan lane runs the front shell in the unit tests (bdev_gga_ut,
# gga_front_ut); this scenario runs in the normal lane, and under ASan in
# make torture (GGA_TORTURE=1).
if [ "${GGA_LANE:-normal}" = asan ] && [ -z "${GGA_TORTURE:-}" ]; then
	skip "the ASan run of this test is in make torture (make test's normal lane runs it)"
fi

D=$TMP/topo
source "$(dirname "$0")/topology_lib.sh"
BP=$BIN/bdevperf

f2rpc() {
	"$BIN/gga_rpc" -s "$D/front2.sock" -t 10 "$@"
}

# front_of NAME EXPR: EXPR on the "front" object (f) of NAME's gga0 info.
front_of() {
	"$BIN/gga_rpc" -s "$D/$1.sock" -t 10 bdev_gga_get_info '{"name":"gga0"}' 2>/dev/null |
		python3 -c 'import json, sys
f = json.load(sys.stdin)[0]["front"]
print(json.dumps(eval(sys.argv[1])))' "$2"
}

# wait_front NAME SECONDS EXPR: until EXPR on NAME's front object is true.
wait_front() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		[ "$(front_of "$1" "$3")" = true ] && return 0
		sleep 0.1
	done
	echo "waited $2 s on $1 for: $3; now: $(front_of "$1" f)"
	return 1
}

# single NAME: a gga_blocks.py configuration with NAME's path only.
single() {
	python3 - "$D/bdevperf.json" "$1" >"$D/$1.blocks.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
paths = cfg["subsystems"][0]["config"]
keep = paths[0] if sys.argv[2] == "front" else paths[1]
keep["params"].pop("multipath", None)
cfg["subsystems"][0]["config"] = [keep]
print(json.dumps(cfg))
PY
}

# via NAME write|check SEED LBAS: known blocks through one front only.
via() {
	timeout -k 5 120 python3 "$BLOCKS" "$2" --config "$D/$1.blocks.json" --seed "$3" --lbas "$4" \
		>"$TMP/via.out" 2>&1
	local rc=$?
	cat "$TMP/via.out"
	return $rc
}

# bdevperf's verify run writes over the whole bdev: the sets are written after it.
A=1024:2048:4
B=1:1024:4
C=0:512

topo up --fronts 2 --size 16 >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up with two fronts (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$TMP/up.out"
single front
single front2

# 1. Roles.
check "front: active, serving, holds the three members" \
	test "$(front_of front '[f["role"], f["serving"], f["members_held"]]')" = '["active", true, 3]'
check "front2: standby, not serving, holds none" \
	test "$(front_of front2 '[f["role"], f["serving"], f["members_held"]]')" = '["standby", false, 0]'
check "front2 has read no member: the states it shows are unknown" \
	test "$("$BIN/gga_rpc" -s "$D/front2.sock" bdev_gga_get_info '{"name":"gga0"}' |
		jget - '[d[0]["state"]] + [m["state"] for m in d[0]["members"]]')" = '["unknown", "unknown", "unknown", "unknown"]'
check "a write through front" via front write 6 0:16
check_fails "a write through the standby fails (its namespace is inaccessible)" via front2 write 7 0:16
check "the block front wrote reads back through it" via front check 6 0:16

# 2. SIGKILL the active one under bdevperf (both paths, multipath).
timeout -k 5 60 "$BP" --json "$D/bdevperf.json" -m 0x2 -q 8 -o 4096 -w verify -t 10 \
	>"$TMP/failover.out" 2>&1 &
bpp=$!
PIDS+=("$bpp")
sleep 3
t0=$(date +%s%N)
topo kill-target front >/dev/null 2>&1
wait_front front2 15 'f["role"] == "active" and f["serving"]'
took=$((($(date +%s%N) - t0) / 1000000))
check "front2 active and serving after the SIGKILL" test "$(front_of front2 'f["serving"]')" = true
wait $bpp
rc=$?
check "bdevperf across the failover: exit 0 (rc $rc)" test $rc -eq 0
check "bdevperf: blocks verified, 0 mismatches, no failed I/O" \
	bash -c "grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$TMP/failover.out' &&
		! grep -q 'run failed' '$TMP/failover.out'"
stall=$(awk '$1 == "ggan1" && $2 == ":" {print $10}' "$TMP/failover.out")
echo "# failover: front2 serving ${took} ms after the SIGKILL; the longest I/O took ${stall} us (lease 2000 ms)"
check "front2 says why: the lease lapsed" test "$(front_of front2 'f["reason"]')" = '"lease lapsed"'
check "set A written through front2" via front2 write 1 "$A"
check "set B written through front2" via front2 write 2 "$B"

# 3. The old front comes back: the lease is renewed, it stays standby.
topo start-target front >"$TMP/restart.out" 2>&1
rc=$?
track
check "front restarted (exit $rc)" test $rc -eq 0
sleep 5
check "front stays standby for more than two leases, front2 still active" \
	test "$(front_of front '[f["role"], f["serving"]]'),$(front_of front2 'f["role"]')" = '["standby", false],"active"'

# 4. Split brain: front2 paused past its lease.
kill -STOP "$(cat "$D/front2.pid")"
check "front takes over while front2 is paused" \
	wait_front front 15 'f["role"] == "active" and f["serving"]'
check "set C written through front over B's blocks" via front write 3 "$C"
kill -CONT "$(cat "$D/front2.pid")"
check_fails "a write through front2 right after it wakes is refused" via front2 write 9 "$C"
check "front2 steps down" \
	wait_front front2 10 'f["role"] in ("stepped_down", "standby") and not f["serving"]'
check "front2's log says why: fenced by a member, or its lease gone while it was paused" \
	grep -Eq "front 2 steps down: (fenced|lease not renewed)" "$D/front2.log"
check "set C reads back through front: nothing of front2's write landed" via front check 3 "$C"
check "set A reads back through front" via front check 1 "$A"
check "set B reads back through front where C did not overwrite it" via front check 2 513:1024:4

# 5. Planned hand-over to front2, which stood by again by itself after its fence.
check "front2 stands by again, not assembled" \
	wait_front front2 10 'f["role"] == "standby" and not f["assembled"]'
check "front2's log says it let go of its assembly" grep -q 'front 2 stands by again' "$D/front2.log"
"$BIN/gga_rpc" -s "$D/front.sock" -t 10 bdev_gga_hand_over '{"name":"gga0"}' >/dev/null
check "hand-over: front stops serving" \
	test "$(front_of front 'f["serving"]')" = false
check "hand-over: front releases the three members" wait_front front 5 'f["members_held"] == 0'
t0=$(date +%s%N)
f2rpc bdev_gga_hand_over '{"name":"gga0"}' >/dev/null
check "hand-over: front2 active and serving" wait_front front2 10 'f["role"] == "active" and f["serving"]'
took=$((($(date +%s%N) - t0) / 1000000))
echo "# hand-over: front2 serving ${took} ms after it was asked (no lease to wait out)"
check "front2 took over by the hand-over, not by a lapsed lease" \
	test "$(front_of front2 'f["reason"]')" = '"hand-over"'
check "set C reads back through front2" via front2 check 3 "$C"
check "front, having handed over, stands by again" \
	wait_front front 10 'f["role"] == "standby" and not f["assembled"]'

# 6. A failover while a member is down.
topo kill-target front >/dev/null 2>&1
topo start-target front >/dev/null 2>&1
track
check "front restarted as standby" wait_front front 10 'f["role"] == "standby"'
topo kill-target 1 >/dev/null 2>&1
check "set D written through front2, degraded" via front2 write 4 2048:2560
topo kill-target front2 >/dev/null 2>&1
check "front takes over with hb1 down" wait_front front 15 'f["role"] == "active" and f["serving"]'
check "it holds two members" test "$(front_of front 'f["members_held"]')" = 2
check "array degraded, data_2 absent" test "$(states)" = '["online", "absent", "online", "degraded"]'
check "set D reads back, degraded" via front check 4 2048:2560
check "set C reads back, degraded" via front check 3 "$C"
topo start-target 1 >/dev/null 2>&1
track
check "hb1 back: front takes it once front2's lease on it lapses, resyncs it" \
	wait_info 30 'd[0]["state"] == "online" and d[0]["front"]["members_held"] == 3'
check "set D reads back with every member" via front check 4 2048:2560

# 7. A takeover during a rebuild.
topo start-target front2 >/dev/null 2>&1
track
check "front2 back as standby" wait_front front2 10 'f["role"] == "standby"'
frpc bdev_gga_set_options '{"name":"gga0","rebuild_rate_mib_s":1}' >/dev/null
topo stop-target 1 >/dev/null 2>&1
size=$(stat -c %s "$D/hb1.img")
truncate -s 0 "$D/hb1.img" && truncate -s "$size" "$D/hb1.img"
w0=$(gga_info 'd[0]["counters"]["writes"]')
timeout -k 5 90 "$BP" --json "$D/bdevperf.json" -m 0x2 -q 4 -o 4096 -w verify -t 25 \
	>"$TMP/rebuild.out" 2>&1 &
bpp=$!
PIDS+=("$bpp")
# The rate limit holds only while the front has I/O: bdevperf must be writing first.
check "bdevperf writes through front" wait_info 20 "d[0][\"counters\"][\"writes\"] > $w0 + 1000"
topo start-target 1 >/dev/null 2>&1
track
check "front rebuilds the blank data_2 at 1 MiB/s under I/O" \
	wait_info 20 'd[0]["recovery"] is not None and d[0]["recovery"]["kind"] == "rebuild" and d[0]["recovery"]["blocks_done"] >= 512'
# A checkpoint is persisted every 2 s.
sleep 3
off=$(stat -c %s "$D/front2.log")
topo kill-target front >/dev/null 2>&1
check "front2 takes over during the rebuild" \
	wait_front front2 15 'f["role"] == "active" and f["serving"]'
line=$(tail -c +$((off + 1)) "$D/front2.log" | grep -m1 "rebuilding data_2")
echo "# $line"
check "front2 resumes the rebuild from the checkpoint, not from block 0" \
	bash -c "[[ '$line' =~ from\ block\ ([0-9]+) ]] && [ \${BASH_REMATCH[1]} -gt 0 ]"
wait $bpp
rc=$?
check "bdevperf across the takeover during the rebuild: exit 0 (rc $rc)" test $rc -eq 0
check "bdevperf: blocks verified, 0 mismatches, no failed I/O" \
	bash -c "grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$TMP/rebuild.out' &&
		! grep -q 'run failed' '$TMP/rebuild.out'"
check "front2 ends the rebuild: all three online" \
	bash -c "for i in \$(seq 1 300); do \"$BIN/gga_rpc\" -s '$D/front2.sock' -t 10 bdev_gga_get_info '{\"name\":\"gga0\"}' | grep -q '\"state\": \"online\"' && exit 0; sleep 0.2; done; exit 1"

topo down >"$TMP/down.out" 2>&1
check "down: the daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" -ge 4
finish
