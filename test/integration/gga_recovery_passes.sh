#!/usr/bin/env bash
# Recovery passes that must not lose data (issue 22 items 1, 3 and 5) on the
# three-target topology (scripts/gga_topology.sh --size 16, file members over
# NVMe/TCP), one fresh topology per case; each case lost data on e5a27b9:
#  5. a stale checkpoint: set A written, the parity target SIGKILLed, set B
#     written, the parity target back and its resync held to 1 MiB/s under a
#     light read load until the members' records hold a checkpoint at block
#     1024 or beyond; the parity target SIGKILLed again, set C written below
#     that checkpoint, the target back, the pass unlimited. e5a27b9 resumed the
#     pass from the checkpoint and skipped set C: with target 0 gone its blocks
#     failed. Sets A, B and C must read right without target 0;
#  6. a blank member at assembly inherits the checkpoint: as in 5 up to the
#     persisted checkpoint, then the front stopped (SIGTERM) and the parity
#     target too, hb2.img truncated to blank, both started again. The parity
#     must be rebuilt from block 0 and, once it is online, sets A and B read
#     right without target 0;
#  7. the front SIGKILLed within milliseconds of formatting a blank member:
#     data_2's target stopped, hb1.img truncated, the target started; the
#     front's probe finds it blank and formats it, and the front is SIGKILLed
#     0, 2, 5, 10, 20 and 50 ms after its log says so, then started again. Once every
#     member is online, all 4096 blocks must read right without target 0
#     (e5a27b9 left data_2 online with a blank data area at some delays).
# GGA_CASES (default "c5 c6 c7") runs only the cases it names. With GGA_BUILD
# set to the build of an older commit the topology attaches
# without retry_first_connect (gga_topology.sh says so); nothing else here
# needs a newer RPC or parameter.
source "$(dirname "$0")/common.sh"

# make test's ASan lane leaves this test to make torture, which runs it under
# ASan+UBSan (GGA_TORTURE=1): it is among the longest, and make test has a
# budget. The normal lane runs it in make test.
if [ "${GGA_LANE:-normal}" = asan ] && [ -z "${GGA_TORTURE:-}" ]; then
	skip "the ASan run of this test is in make torture (make test's normal lane runs it)"
fi

command -v python3 >/dev/null || skip "python3 is needed (gga_blocks.py)"
command -v truncate >/dev/null || skip "truncate (coreutils) is needed"

D=$TMP/c5
source "$(dirname "$0")/topology_lib.sh"

CASES=" ${GGA_CASES:-c5 c6 c7} "

# want NAME: the case is to run (GGA_CASES) and its fresh topology came up.
want() {
	[[ "$CASES" == *" $1 "* ]] && up_case "$1"
}

# member_down SECONDS N: until gga0 shows member N not online.
member_down() {
	wait_info "$1" "d[0]['members'][$2]['state'] != 'online'" >/dev/null
}

# set_rate MIB_S: the recovery rate of gga0 (0: unlimited), for the pass
# running too.
set_rate() {
	frpc bdev_gga_set_options "{\"name\":\"gga0\",\"rebuild_rate_mib_s\":$1}" >/dev/null
}

# record FILE: the superblock record at the start of a member file (after the
# file bdev's 4 KiB header; docs/FORMAT.md §2, §3): its event counter and
# recovery checkpoint, or "blank".
record() {
	python3 - "$1" <<'PY'
import struct, sys
with open(sys.argv[1], "rb") as f:
    f.seek(4096)
    r = f.read(128)
if len(r) < 128 or r == bytes(128):
    print("blank")
    sys.exit(0)
events, offset = struct.unpack_from("<QQ", r, 80)
mask = struct.unpack_from("<H", r, 112)[0]
print("events %d recovery_mask 0x%x recovery_offset %d" % (events, mask, offset))
PY
}

# checkpoint_past SECONDS FILE MEMBER BLOCK: until the record in FILE holds a
# recovery checkpoint of MEMBER (0 .. 2) at BLOCK or beyond: the pass is past
# BLOCK and its position persisted (every 2 s). Prints the record.
checkpoint_past() {
	local r mask off
	for _ in $(seq 1 $(($1 * 5))); do
		r=$(record "$2")
		mask=$(echo "$r" | sed -n 's/.*recovery_mask \(0x[0-9a-f]*\).*/\1/p')
		off=$(echo "$r" | sed -n 's/.*recovery_offset \([0-9]*\).*/\1/p')
		if [ -n "$mask" ] && [ $((mask & (1 << $3))) -ne 0 ] && [ "$off" -ge "$4" ]; then
			echo "$r"
			return 0
		fi
		sleep 0.2
	done
	echo "after $1 s: $r; recovery $(gga_info 'd[0]["recovery"]' 2>&1 | tr -d '\n' | cut -c1-300)"
	return 1
}

# reader_start SEED LBAS: a light read load through the front (a read every
# 5 ms on one connection) until reader_stop; a pass is held to its rate only
# while the front has I/O.
reader_start() {
	rm -f "$TMP/reader.stop"
	timeout -k 5 120 python3 "$BLOCKS" check --config "$D/bdevperf.json" --seed "$1" \
		--lbas "$2" --passes 100000 --stop-file "$TMP/reader.stop" --pause-ms 5 \
		>"$TMP/reader.out" 2>&1 &
	reader=$!
	PIDS+=("$reader")
}

# reader_stop: stops the reader; its exit status (0: every block it read was
# right).
reader_stop() {
	touch "$TMP/reader.stop"
	wait "$reader"
}

# front_log_from OFFSET: the front's log from byte OFFSET on (the log is
# appended to across restarts).
front_log_from() {
	tail -c +$(($1 + 1)) "$D/front.log"
}

# pass_line OFFSET: the last "rebuilding|resyncing ... from block N" line of
# the front's log from byte OFFSET on.
pass_line() {
	front_log_from "$1" | grep -E '(rebuilding|resyncing) .* from block [0-9]+' | tail -n 1 |
		sed 's/^.*\*NOTICE\*: //'
}

recovered() {
	wait_info "$1" "d[0]['state'] == 'online' and d[0]['recovery'] is None and all(m['state'] == 'online' for m in d[0]['members'])"
}

A=0:4096:2
B=1:4096:16
C=3:1024:8
R=2048:2176:2

# stale_pass_at SEEDA SEEDB CASE: set A, the parity target killed, set B, the
# parity target back with its resync held to 1 MiB/s under reads until the
# members' records hold a checkpoint at block 1024 or beyond. Leaves the
# pass running and the reader reading: with the front idle for 50 ms the pass
# would go unlimited and could end before the next step.
stale_pass_at() {
	local out rc
	check "$3: set A written" gb write "$1" "$A"
	check "$3: the front settles" settle 30
	topo kill-target 2 >/dev/null
	if member_down 5 2; then
		ok "$3: parity target SIGKILLed, parity not online"
	else
		# Not this test's concern (gga_never_wrong.sh case 3): e5a27b9 kept a
		# dead member online until I/O to it failed, and set B's writes do.
		echo "# $3: parity still online 5 s after its target was SIGKILLed"
	fi
	check "$3: set B written, parity down (every bitmap region marked)" gb write "$2" "$B"
	check "$3: rebuild_rate_mib_s 1" set_rate 1
	reader_start "$1" "$R"
	topo start-target 2 >/dev/null
	track
	out=$(checkpoint_past 40 "$D/hb0.img" 2 1024)
	rc=$?
	check "$3: parity's resync at 1 MiB/s persists a checkpoint at block 1024 or beyond ($out)" \
		test $rc -eq 0
	out=$(gga_info 'd[0]["recovery"] and "%s of %s, blocks_done %d of %d" % (d[0]["recovery"]["kind"], d[0]["recovery"]["members"], d[0]["recovery"]["blocks_done"], d[0]["recovery"]["blocks_total"])')
	check "$3: the pass is still running ($out)" \
		test "$(gga_info 'd[0]["recovery"] is not None and d[0]["recovery"]["blocks_done"] < 4096')" = true
}

# ---------------------------------------------------------------------------
# 5. A stale checkpoint: writes below it while its member is gone.
if want c5; then
	stale_pass_at 51 52 c5
	topo kill-target 2 >/dev/null
	check "c5: parity target SIGKILLed mid-pass, parity not online" member_down 5 2
	reader_stop
	rc=$?
	check "c5: the reader read right during the pass and the kill ($(tail -n 1 "$TMP/reader.out"))" \
		test $rc -eq 0
	rec=$(record "$D/hb0.img")
	check "c5: set C written below the checkpoint ($rec)" gb write 53 "$C"
	check "c5: rebuild_rate_mib_s 0" set_rate 0
	off=$(stat -c %s "$D/front.log")
	topo start-target 2 >/dev/null
	track
	check "c5: parity target back, recovered, all three online" recovered 60
	line=$(pass_line "$off")
	check "c5: the front settles ($line)" settle 30
	topo kill-target 0 >/dev/null
	check "c5: set A reads right without target 0" gb check 51 "$A"
	check "c5: set B reads right without target 0" gb check 52 "$B"
	check "c5: set C (written below the checkpoint) reads right without target 0" gb check 53 "$C"
fi

# ---------------------------------------------------------------------------
# 6. A member blank at assembly must not inherit the checkpoint.
if want c6; then
	stale_pass_at 61 62 c6
	out=$(topo stop-target front 2>&1)
	check "c6: front stopped mid-pass ($out)" grep -q 'front stopped' <<<"$out"
	# The front went away under the reader: only its bytes are judged.
	reader_stop
	check "c6: the reader read no wrong byte during the pass ($(tail -n 1 "$TMP/reader.out"))" \
		grep -q '^check: [0-9]* blocks, 0 wrong, ' "$TMP/reader.out"
	rec=$(record "$D/hb0.img")
	check "c6: the records hold the checkpoint ($rec)" \
		bash -c "[[ '$rec' =~ recovery_mask\ 0x4\ recovery_offset\ ([0-9]+) ]] && [ \${BASH_REMATCH[1]} -ge 1024 ]"
	topo stop-target 2 >/dev/null
	size=$(stat -c %s "$D/hb2.img")
	truncate -s 0 "$D/hb2.img" && truncate -s "$size" "$D/hb2.img"
	check "c6: hb2.img blank" cmp -s -n "$size" "$D/hb2.img" /dev/zero
	topo start-target 2 >/dev/null
	check "c6: parity target starts on the blank file" test $? -eq 0
	off=$(stat -c %s "$D/front.log")
	topo start-target front >"$TMP/c6.start.out" 2>&1
	rc=$?
	track
	check "c6: front starts again from its saved configuration (exit $rc)" test $rc -eq 0
	check "c6: parity rebuilt, all three online" recovered 60
	line=$(pass_line "$off")
	check "c6: parity rebuilt from block 0 ($line)" grep -q 'rebuilding parity.* from block 0 ' <<<"$line"
	check "c6: the front settles" settle 30
	topo kill-target 0 >/dev/null
	check "c6: set A reads right without target 0" gb check 61 "$A"
	check "c6: set B reads right without target 0" gb check 62 "$B"
fi

# ---------------------------------------------------------------------------
# 7. The front SIGKILLed just after its probe formats a blank member.

# kill_after_format OFFSET MS: once the front's log from byte OFFSET on says a
# member answers again and is blank, SIGKILL the front MS milliseconds later
# (waits 20 s at most). Prints when it struck.
kill_after_format() {
	timeout -k 5 30 python3 - "$D/front.log" "$1" "$2" "$(cat "$D/front.pid")" <<'PY'
import os, signal, sys, time
path, off, ms, pid = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
deadline = time.monotonic() + 20
buf = b""
with open(path, "rb") as f:
    f.seek(off)
    while b"answers again and is blank" not in buf:
        if time.monotonic() > deadline:
            print("no 'answers again and is blank' in 20 s")
            sys.exit(1)
        chunk = f.read()
        if chunk:
            buf += chunk
        else:
            time.sleep(0.0005)
seen = time.monotonic()
time.sleep(ms / 1000.0)
os.kill(pid, signal.SIGKILL)
print("SIGKILL %.1f ms after the line" % ((time.monotonic() - seen) * 1000))
PY
}

if want c7; then
	check "c7: LBAs 0-4095 written" gb write 71 0:4096
	check "c7: the front settles" settle 30
	# The window is a few milliseconds wide and moves with the machine's load:
	# several delays in it, and two past it (GGA_C7_DELAYS sets them).
	delays=${GGA_C7_DELAYS:-0 2 5 10 20 50}
	for ms in $delays; do
		topo stop-target 1 >/dev/null
		member_down 5 1
		size=$(stat -c %s "$D/hb1.img")
		truncate -s 0 "$D/hb1.img" && truncate -s "$size" "$D/hb1.img"
		off=$(stat -c %s "$D/front.log")
		topo start-target 1 >/dev/null
		track
		out=$(kill_after_format "$off" "$ms")
		check "c7 ${ms} ms: hb1.img blank, the front's probe formats it, the front SIGKILLed ($out)" \
			test $? -eq 0
		topo start-target front >"$TMP/c7.start.out" 2>&1
		rc=$?
		track
		check "c7 ${ms} ms: front starts again (exit $rc)" test $rc -eq 0
		check "c7 ${ms} ms: data_2 recovered, all three online" recovered 60
		line=$(pass_line "$off")
		check "c7 ${ms} ms: the front settles ($line)" settle 30
		topo kill-target 0 >/dev/null
		gb check 71 0:4096 >/dev/null
		check "c7 ${ms} ms: LBAs 0-4095 read right without target 0 ($(tail -n 1 "$TMP/gb.out"))" \
			grep -q ' 0 wrong, 0 failed, 4096 right' "$TMP/gb.out"
		topo start-target 0 >/dev/null
		track
		settle 60 >/dev/null || break
	done
fi

if [ -f "$D/topology.env" ]; then
	topo down >"$TMP/down.out" 2>&1
	check "down: the daemons still running exit 0" \
		bash -c "grep -q 'exit 0)' '$TMP/down.out' && ! grep -v 'exit 0)' '$TMP/down.out' | grep -q ."
fi
finish
