#!/usr/bin/env bash
# The error policy never takes the array down by itself (issue 32, cases
# 1-3), on the three-target topology (scripts/gga_topology.sh --size 16, file
# members over NVMe/TCP; member_error_limit 20, the default):
#  2. one unreadable block read again and again: LBA 100's fragment on data_1
#     corrupt, target 1 down, LBA 100 read 45 times (a retrying host). On
#     9a81145 data_1 was faulted after 20 reads and the array failed with
#     4,095 of 4,096 blocks recoverable. Now the block is charged once,
#     data_1 stays online, only LBA 100 fails, every other block reads;
#  1. reads racing writes with a member down: target 1 down, 4 KiB random
#     reads at QD16 while a writer rewrites the same blocks, no corruption.
#     On 9a81145 a fragment caught mid-write on the unlocked read was charged
#     to its member, which was faulted, failing the array. Now no member is
#     charged and no read fails;
#  7. a member that stalls while exactly k are online: target 1 down, target
#     0 SIGSTOPped for 6.5 s (member_timeout_ms 5000) under bdevperf verify.
#     Before, data_1 was failed at 5 s, the array with it, and every request
#     failed until the probe took it back; now it is kept (the requests wait)
#     and bdevperf sees no failed I/O;
#  3. the way back: 20 corrupt fragments on data_1, all three online: data_1
#     is faulted (k others stay in sync), the fault is in the superblocks (a
#     front restart keeps it out), and bdev_gga_clear_member brings it back
#     with a resync; the array is online again and every block reads.
source "$(dirname "$0")/common.sh"

command -v python3 >/dev/null || skip "python3 is needed (gga_blocks.py)"

# make test's ASan lane runs the error policy in the unit tests
# (bdev_gga_recovery_ut, gga_lifecycle_ut); this scenario runs in the normal
# lane, and under ASan in make torture (GGA_TORTURE=1).
if [ "${GGA_LANE:-normal}" = asan ] && [ -z "${GGA_TORTURE:-}" ]; then
	skip "the ASan run of this test is in make torture (make test's normal lane runs it)"
fi

BP=$BIN/bdevperf
D=$TMP/su
source "$(dirname "$0")/topology_lib.sh"

# flip FILE LBA...: invert byte 7 of each LBA's data fragment in a member
# file (file bdev: 4 KiB header, 2048 data bytes a block, 32 reserved blocks).
flip() {
	python3 - "$@" <<'PY'
import sys
path = sys.argv[1]
with open(path, "r+b") as f:
    for lba in map(int, sys.argv[2:]):
        pos = 4096 + (32 + lba) * 2048 + 7
        f.seek(pos)
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ 0xFF]))
PY
}

# gb_count WORD: the count before WORD in the last check's summary.
gb_count() {
	sed -n "s/^check: .* \([0-9][0-9]*\) $1\b.*/\1/p" "$TMP/gb.out" | tail -n 1
}

member() {
	gga_info "[d[0]['members'][$1][k] for k in ('state', 'faulted', 'errors')]"
}

up_case su || exit 1
topo kill-target 1 >/dev/null 2>&1
check "degraded once target 1 is gone" wait_info 15 'd[0]["state"] == "degraded"'

# --- 1. reads racing writes, target 1 down ---
timeout -k 5 60 "$BP" --json "$D/bdevperf.json" -q 16 -o 4096 -w randwrite -t 8 --seed 7 \
	--output json >"$TMP/writer.json" 2>"$TMP/writer.err" &
wpid=$!
PIDS+=("$wpid")
timeout -k 5 60 "$BP" --json "$D/bdevperf.json" -q 16 -o 4096 -w randread -t 8 --seed 9 \
	--output json >"$TMP/reader.json" 2>"$TMP/reader.err"
rrc=$?
wait "$wpid"
wrc=$?
check "(1) the reader and the writer ran (exit $rrc, $wrc)" test $rrc -eq 0 -a $wrc -eq 0
check "(1) no read failed" test "$(jget "$TMP/reader.json" 'd["total"]["io_failed"]')" = 0
check "(1) no write failed" test "$(jget "$TMP/writer.json" 'd["total"]["io_failed"]')" = 0
check "(1) data_1 and parity online, never charged for the race" \
	test "$(gga_info '[(m["state"], m["faulted"], m["errors"]) for m in d[0]["members"][0::2]]')" = \
	'[["online", false, 0], ["online", false, 0]]'
check "(1) the array serves (degraded)" test "$(gga_info 'd[0]["state"]')" = degraded

# --- 7. a stall with exactly k online is waited out (target 1 still down) ---
timeout -k 5 90 "$BP" --json "$D/bdevperf.json" -q 8 -o 4096 -w verify -t 14 \
	--output json >"$TMP/stall.json" 2>"$TMP/stall.err" &
spid=$!
PIDS+=("$spid")
sleep 3
kill -STOP "$(cat "$D/hb0.pid")"
sleep 6.5
kill -CONT "$(cat "$D/hb0.pid")"
wait "$spid"
src=$?
check "(7) bdevperf verify across the stall (exit $src)" test $src -eq 0
check "(7) no I/O failed" test "$(jget "$TMP/stall.json" 'd["total"]["io_failed"]')" = 0
check "(7) data_1 kept online, the array degraded (never failed)" \
	test "$(gga_info '[d[0]["members"][0]["state"], d[0]["state"]]')" = '["online", "degraded"]'
check "(7) the front's log says it was kept" grep -q "kept (failing it would leave" "$D/front.log"
[ $src -eq 0 ] || tail -5 "$TMP/stall.err"

# --- 2. one unreadable block, read again and again (target 1 still down) ---
check "set A written (every block)" gb write 1 0:4096:1
flip "$D/hb0.img" 100
gb check 1 100:101:1 --passes 45 >/dev/null
check "(2) LBA 100 read 45 times, every read failed" \
	test "$(gb_count failed)" = 45 -a "$(gb_count right)" = 0
check "(2) data_1 charged once, online, not faulted" \
	test "$(member 0)" = '["online", false, 1]'
check "(2) the block counted lost once, not per read" \
	test "$(gga_info 'd[0]["unrecoverable_blocks"]')" = 1
check "(2) the array still serves (degraded)" test "$(gga_info 'd[0]["state"]')" = degraded
gb check 1 0:4096:1 >/dev/null
check "(2) every other block reads right (4095 right, 1 failed)" \
	test "$(gb_count right)" = 4095 -a "$(gb_count failed)" = 1

# --- 3. faulted with k others in sync; the fault survives a restart; cleared ---
# LBA 100 mended by hand (its fragment flipped back), target 1 back: resynced,
# and a clean scrub forgets the block counted lost.
flip "$D/hb0.img" 100
topo start-target 1 >/dev/null 2>&1
track
check "(3) target 1 back and resynced" \
	wait_info 60 'all(m["state"] == "online" for m in d[0]["members"]) and not d[0]["recovery"]'
check "(3) a scrub" frpc bdev_gga_scrub '{"name":"gga0","action":"start","rate_mib_s":0}'
check "(3) it ends clean" wait_info 60 'd[0]["scrub"]["state"] == "done" and d[0]["scrub"]["unrecoverable_blocks"] == 0'
check "(3) settled: all online" settle 30
check "(3) set B written" gb write 2 0:4096:1
flip "$D/hb0.img" $(seq 200 219)
gb check 2 200:220:1 >/dev/null
check "(3) the 20 blocks read right (mended)" test "$(gb_count right)" = 20
check "(3) data_1 faulted after 20 confirmed errors" \
	wait_info 10 'd[0]["members"][0]["faulted"] and d[0]["members"][0]["state"] == "failed"'
check "(3) the array serves (degraded)" test "$(gga_info 'd[0]["state"]')" = degraded
topo stop-target front >/dev/null 2>&1
topo start-target front >/dev/null 2>&1
track
check "(3) after a front restart data_1 is still faulted (from the superblocks)" \
	wait_info 20 'd[0]["members"][0]["faulted"] and d[0]["state"] == "degraded"'
check "(3) bdev_gga_clear_member data_1" frpc bdev_gga_clear_member '{"name":"gga0","member":"data_1"}'
check "(3) data_1 back by a resync, the array online" \
	wait_info 30 'd[0]["state"] == "online" and (d[0]["last_recovery"] or {}).get("kind") == "resync"'
gb check 2 0:4096:1 >/dev/null
check "(3) every block of set B reads right" test "$(gb_count right)" = 4096
topo kill-target 1 >/dev/null 2>&1
gb check 2 0:4096:1 >/dev/null
check "(3) and without target 1 (from the resynced data_1 and parity)" \
	test "$(gb_count right)" = 4096
finish
