#!/usr/bin/env bash
# Healing on the gga topology (scripts/gga_topology.sh: file members over
# NVMe/TCP), issue 9's scenarios beside gga_front_restart.sh:
#  (a) target 1 down while set B is written; the front SIGKILLed; both
#      restarted: the array is assembled with data_2 stale (from the
#      superblocks, though its own record says it is in sync), resynced over
#      B's regions, never read before; then target 0 killed: all data right;
#  (b) target 2 comes back on a blank disk: detected, rebuilt whole, then
#      target 0 killed: all data right;
#  (c) a rebuild under a bdevperf verify run (0 mismatches) and writes of a
#      set C, held to a low rate; the front SIGKILLed mid-rebuild and
#      restarted: the rebuild resumes from its checkpoint and ends; then
#      target 2 killed: C right;
#  (d) bits flipped in two member files (data and metadata of known blocks):
#      bdev_gga_scrub repairs every one, a second scrub finds nothing.
source "$(dirname "$0")/common.sh"

# make test's ASan lane leaves this test to make torture, which runs it under
# ASan+UBSan (GGA_TORTURE=1): it is among the longest, and make test has a
# budget. The normal lane runs it in make test.
if [ "${GGA_LANE:-normal}" = asan ] && [ -z "${GGA_TORTURE:-}" ]; then
	skip "the ASan run of this test is in make torture (make test's normal lane runs it)"
fi

BP=$BIN/bdevperf
D=$TMP/topo
source "$(dirname "$0")/topology_lib.sh"
A=0:1024:2
B=4096:16384:128
# Written during (c)'s rebuild, after its verify run (which writes all over
# the bdev, A and B included).
C=8192:12288:16
# Member file layout (file bdev): 4 KiB header, blocks of 2048 + 64 bytes,
# 32 reserved blocks; logical block L's fragment is member block 32 + L.
MBS=2112

# scrub_counts "[REPAIRED, UNRECOVERABLE]": the last scrub's counts, and on a
# mismatch what the daemons logged since the front's restart in (d) (member
# state changes, blocks not resolved, connections closed).
scrub_counts() {
	local got
	got=$(gga_info '[d[0]["scrub"]["fragments_repaired"], d[0]["scrub"]["unrecoverable_blocks"]]')
	[ "$got" = "$1" ] && return 0
	echo "scrub counts $got, wanted $1; the daemons' logs since (d):"
	tail -n +"$front_mark" "$D/front.log" | grep -E "member|scrub|resolved|fail|clos|tim" | tail -n 15
	grep -hE "clos|timeout|error" "$D"/hb[0-2].log | tail -n 8
	return 1
}

# wait_front_log LINE PATTERN SECONDS: the front's log, from line LINE on, has PATTERN.
wait_front_log() {
	local i
	for i in $(seq 1 $(($3 * 5))); do
		tail -n +"$1" "$D/front.log" | grep -q "$2" && return 0
		sleep 0.2
	done
	echo "no '$2' in the front's log after $3 s"
	return 1
}

all_data_right() {
	blocks check 1 "$A" && blocks check 2 "$B"
}

# blank_member N: the member file of target N loses everything but the file
# bdev's own header (a disk replaced by a new one of the same geometry).
blank_member() {
	python3 - "$D/hb$1.img" <<'PY'
import os, sys
size = os.path.getsize(sys.argv[1])
with open(sys.argv[1], "r+b") as f:
    f.truncate(4096)
    f.truncate(size)
PY
}

# flip FILE LBA OFFSET: flip one bit of logical block LBA's fragment in a
# member file (OFFSET < 2048: data; 2048.. : metadata).
flip() {
	python3 - "$1" "$2" "$3" "$MBS" <<'PY'
import sys
path, lba, off, mbs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
pos = 4096 + (32 + lba) * mbs + off
with open(path, "r+b") as f:
    f.seek(pos)
    b = f.read(1)
    f.seek(pos)
    f.write(bytes([b[0] ^ 0x10]))
PY
}

topo up --size 64 >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up (exit $rc)" test $rc -eq 0
check "set A written" blocks write 1 "$A"
check "bitmap cleared once every member is online" wait_info 15 'd[0]["bitmap"]["dirty"] == 0'

# --- (a) a stale member at assembly ---
topo kill-target 1 >/dev/null 2>&1
check "(a) set B written with target 1 down" blocks write 2 "$B"
nb=$(python3 "$BLOCKS" regions --lbas "$B")
topo kill-target front >/dev/null 2>&1
topo start-target 1 >/dev/null 2>&1
check "(a) target 1 back, its superblock still says every member is in sync" python3 -c '
import sys
b = open(sys.argv[1], "rb").read(4096 + 128)
assert b[4096:4104] == b"GGASUPER" and b[4096 + 96:4096 + 99] == bytes(3), b[4096 + 96:4096 + 99]' "$D/hb1.img"
topo start-target front >/dev/null 2>&1
rc=$?
track
check "(a) front restarts (exit $rc)" test $rc -eq 0
check "(a) assembled with data_2 not online: the freshest superblocks say stale" \
	test "$(gga_info 'd[0]["members"][1]["state"] != "online" or (d[0]["last_recovery"] or {}).get("kind") == "resync"')" = true
check "(a) data_2 resynced, array online" wait_info 60 'd[0]["state"] == "online"'
check "(a) a resync over B's $nb regions exactly" \
	test "$(gga_info '[d[0]["last_recovery"]["kind"], d[0]["last_recovery"]["regions"]]')" = "[\"resync\", $nb]"
check "(a) the log: assembled stale, then resynced" \
	grep -q "member data_2 'hb1n1': stale -> rebuilding (resync started)" "$D/front.log"
topo kill-target 0 >/dev/null 2>&1
check "(a) target 0 killed: every block of A and B right" all_data_right
topo start-target 0 >/dev/null 2>&1
check "(a) target 0 back: checked, online" wait_info 60 'd[0]["state"] == "online"'

# --- (b) a target back on a blank disk ---
topo stop-target 2 >/dev/null 2>&1
blank_member 2
topo start-target 2 >/dev/null 2>&1
check "(b) the blank member is rebuilt whole, array online" \
	wait_info 60 'd[0]["state"] == "online" and d[0]["last_recovery"]["kind"] == "rebuild" and d[0]["last_recovery"]["members"] == ["parity"]'
check "(b) every block copied" \
	test "$(gga_info 'd[0]["last_recovery"]["blocks"] == d[0]["num_blocks"]')" = true
check "(b) the log: it came back blank" grep -q "member parity 'hb2n1': .* -> stale (came back blank" "$D/front.log"
topo kill-target 0 >/dev/null 2>&1
check "(b) target 0 killed: every block of A and B right, from data_2 and the rebuilt parity" \
	all_data_right
topo start-target 0 >/dev/null 2>&1
check "(b) target 0 back, online" wait_info 60 'd[0]["state"] == "online"'

# --- (c) a rebuild under verify, the front SIGKILLed in the middle ---
# A randread run keeps the front busy throughout, so the rebuild is held to
# 4 MiB/s (the limit applies while the front has I/O) and lasts.
frpc bdev_gga_set_options '{"name":"gga0","rebuild_rate_mib_s":4}' >/dev/null
topo stop-target 1 >/dev/null 2>&1
blank_member 1
timeout -k 5 120 "$BP" --json "$D/bdevperf.json" -m 0x2 -q 4 -o 4096 -w randread -t 60 \
	>"$TMP/busy.out" 2>&1 &
busy_pid=$!
PIDS+=("$busy_pid")
topo start-target 1 >/dev/null 2>&1
check "(c) data_2 is rebuilt under I/O" \
	wait_info 30 'd[0]["recovery"] is not None and d[0]["recovery"]["kind"] == "rebuild"'
timeout -k 5 120 "$BP" --json "$D/bdevperf.json" -m 0x2 -q 16 -o 4096 -w verify -t 5 \
	>"$TMP/verify1.out" 2>&1
rc=$?
check "(c) verify during the rebuild: exit 0 (rc $rc)" test $rc -eq 0
check "(c) verify: 0 mismatches" no_mismatch "$TMP/verify1.out"
check "(c) set C written while data_2 is being rebuilt" blocks write 3 "$C"
check "(c) still rebuilding, past a checkpoint (every 2 s)" \
	wait_info 10 'd[0]["recovery"] is not None and d[0]["recovery"]["seconds"] > 4.5'
topo kill-target front >/dev/null 2>&1
wait "$busy_pid" 2>/dev/null
topo start-target front >/dev/null 2>&1
track
check "(c) after the front's restart the rebuild resumes from its checkpoint" \
	grep -Eq "rebuilding data_2 'hb1n1' from block [1-9][0-9]*" "$D/front.log"
frpc bdev_gga_set_options '{"name":"gga0","rebuild_rate_mib_s":0}' >/dev/null
check "(c) the rebuild ends, array online" wait_info 60 'd[0]["state"] == "online"'
mark=$(($(wc -l <"$D/front.log") + 1))
topo kill-target 2 >/dev/null 2>&1
check "(c) target 2 killed: every block of C right, from data_1 and the rebuilt data_2" \
	blocks check 3 "$C"
topo start-target 2 >/dev/null 2>&1
# Reads do not touch the parity: the member is still "online" until the front
# reconnects to its target (after a backoff) and checks it again.
check "(c) target 2 back: the front reconnects and checks it" \
	wait_front_log "$mark" "base 'hb2n1' was reconnected" 20
check "(c) target 2 online" wait_info 60 'd[0]["state"] == "online"'

# --- (d) scrub ---
# With marks left in the bitmap the assembly would check those regions itself
# (and repair the flips before the scrub): let them clear first.
check "(d) bitmap cleared" wait_info 20 'd[0]["bitmap"]["dirty"] == 0'
front_mark=$(($(wc -l <"$D/front.log") + 1))
# Everything (a) to (c) did left every block whole and its fragments in agreement.
check "(d) a scrub before the flips" frpc bdev_gga_scrub '{"name":"gga0","action":"start","rate_mib_s":0}'
check "(d) it ends" wait_info 60 'd[0]["scrub"]["state"] == "done"'
check "(d) it finds nothing to repair and nothing lost" scrub_counts "[0, 0]"
topo stop-target front >/dev/null 2>&1
flip "$D/hb0.img" 8192 100
flip "$D/hb1.img" 8208 7
flip "$D/hb2.img" 8224 $((2048 + 20))
front_mark=$(($(wc -l <"$D/front.log") + 1))
topo start-target front >/dev/null 2>&1
track
check "(d) front back, online" wait_info 30 'd[0]["state"] == "online"'
check "(d) no region was marked on any member: no check ran at the assembly" \
	bash -c "! grep -q 'checking the .* regions marked' <(tail -n 20 '$D/front.log')"
check "(d) scrub starts" frpc bdev_gga_scrub '{"name":"gga0","action":"start","rate_mib_s":0}'
check "(d) scrub ends" wait_info 60 'd[0]["scrub"]["state"] == "done"'
check "(d) scrub repaired the 3 flipped fragments" scrub_counts "[3, 0]"
check "(d) a second scrub finds nothing" frpc bdev_gga_scrub '{"name":"gga0","action":"start","rate_mib_s":0}'
check "(d) the second scrub ends" wait_info 60 'd[0]["scrub"]["state"] == "done"'
check "(d) second scrub: nothing repaired, nothing lost" scrub_counts "[0, 0]"
check "(d) C right" blocks check 3 "$C"

topo down >"$TMP/down.out" 2>&1
check "down: four daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" = 4
finish
