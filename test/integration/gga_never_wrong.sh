#!/usr/bin/env bash
# "A block reads back as last written, or the read fails" on the three-target
# topology (scripts/gga_topology.sh --size 16, file members over NVMe/TCP),
# one fresh topology per case; each case broke the promise on e5a27b9:
#  1. corrupt fragments: LBA 100's fragment flipped on data_1 and data_2 (not
#     decodable), LBA 101's on data_2 only (decodable). A Read of LBA 100 with
#     2 blocks must fail with an NVMe error status (it returned SUCCESS with
#     LBA 100's bytes wrong), LBA 100 alone fails, failed_ios counts both,
#     LBA 101 and every other block read right;
#  2. two members blank, the front restarted: data_2 and parity truncated to
#     nothing (their targets stopped, then started on the blank files), the
#     front stopped and started from its saved configuration. gga0 came up
#     online, reads returned zeros with SUCCESS and torn-write "repairs"
#     overwrote data_1. Every safe outcome passes (gga0 not created, not
#     exported, or failed); none of LBAs 0-2047 may read back with SUCCESS,
#     and hb0.img's data area and its blocks' metadata stay byte for byte;
#  3. a dead member reported online: the parity target SIGKILLed while the
#     front serves only reads, then again while it is idle. gga0 stayed
#     online with parity online (the controller reconnecting); within 5 s the
#     parity member must show not online and gga0 degraded;
#  4. an old copy of a member trusted: hb1.img copied aside after set A, set
#     B written with all three online and the bitmap cleared, the old copy put
#     back under target 1. It was resynced over the (empty) bitmap and set B
#     was lost once target 0 was gone. The returning member must be rebuilt
#     whole (a rebuild, or a resync of every region written), and sets A and
#     B must read back right from data_2 and parity.
source "$(dirname "$0")/common.sh"

command -v python3 >/dev/null || skip "python3 is needed (gga_blocks.py)"
command -v truncate >/dev/null || skip "truncate (coreutils) is needed"

D=$TMP/c1
source "$(dirname "$0")/topology_lib.sh"

# Geometry of --size 16: 4096 logical blocks, a member block per logical block
# after the 32-block reserved region. The file bdev keeps a 4 KiB header, the
# data area (2048 bytes a block), then the metadata area (64 bytes a block) from
# the next 4 KiB boundary.
NUM_BLOCKS=4096
MEMBER_BLOCKS=$((NUM_BLOCKS + 32))
DATA_OFF=$((4096 + 32 * 2048))
DATA_END=$((4096 + MEMBER_BLOCKS * 2048))
MD_AREA=$(((DATA_END + 4095) / 4096 * 4096))

# gb_count WORD: the count before WORD (wrong, failed, right, zero-filled,
# not read) in the last check's summary; empty if there was none.
gb_count() {
	sed -n "s/^check: .* \([0-9][0-9]*\) $1\b.*/\1/p" "$TMP/gb.out" | tail -n 1
}

# gb_none_succeeded: the last check's reads all failed (or it could not
# connect at all): no block came back with SUCCESS, right or wrong.
gb_none_succeeded() {
	grep -q '^check: connect failed' "$TMP/gb.out" && return 0
	[ "$(gb_count right)" = 0 ] && [ "$(gb_count wrong)" = 0 ]
}

# flip FILE OFFSET: invert one byte of a member file in place.
flip() {
	python3 - "$1" "$2" <<'PY'
import sys
path, off = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(off)
    b = f.read(1)
    assert len(b) == 1, "offset %d beyond %s" % (off, path)
    f.seek(off)
    f.write(bytes([b[0] ^ 0xFF]))
PY
}

# data_off LBA: the offset in hbN.img of data byte 0 of LBA's fragment.
data_off() {
	echo $((4096 + (32 + $1) * 2048))
}

# same_range A B START END: bytes START..END of files A and B are equal; else
# prints how many differ and where the first is.
same_range() {
	python3 - "$@" <<'PY'
import sys
a, b, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(a, "rb") as f:
    f.seek(lo)
    x = f.read(hi - lo)
with open(b, "rb") as f:
    f.seek(lo)
    y = f.read(hi - lo)
if len(x) != hi - lo or len(y) != hi - lo:
    print("short: %d and %d of %d bytes" % (len(x), len(y), hi - lo))
    sys.exit(1)
diff = [i for i in range(0, hi - lo, 64) if x[i:i + 64] != y[i:i + 64]]
if diff:
    print("%d of %d 64-byte pieces differ, the first at file offset %d" % (
        len(diff), (hi - lo) // 64, lo + diff[0]))
    sys.exit(1)
PY
}

# degraded_within SECONDS MEMBER: until gga0 shows member MEMBER (0 .. 2) not
# online and the array degraded; prints how long it took, or the states and the
# front's controllers at the deadline (then returns non-zero).
degraded_within() {
	local t0 ms
	t0=$(date +%s%N)
	for _ in $(seq 1 $(($1 * 20))); do
		ms=$((($(date +%s%N) - t0) / 1000000))
		if [ "$(gga_info "d[0]['members'][$2]['state'] != 'online' and d[0]['state'] == 'degraded'" 2>/dev/null)" = true ]; then
			echo "after $ms ms: $(states)"
			return 0
		fi
		[ $ms -ge $(($1 * 1000)) ] && break
		sleep 0.1
	done
	echo "after $ms ms still $(states), controllers $(frpc bdev_nvme_get_controllers | jget - '[c["name"] + " " + c["state"] for c in d]')"
	return 1
}

# ---------------------------------------------------------------------------
# 1. Corrupt fragments under a multi-block read.
if up_case c1; then
	check "c1: LBAs 0-255 written" gb write 1 0:256
	# The write-intent bitmap clears and the writes have settled before the
	# fragments are corrupted behind the front's back.
	sleep 4
	flip "$D/hb0.img" $(($(data_off 100) + 10))
	flip "$D/hb1.img" $(($(data_off 100) + 10))
	flip "$D/hb1.img" $(($(data_off 101) + 10))
	f0=$(gga_info 'd[0]["counters"]["failed_ios"]')
	gb check 1 100:101 --nlb 2 >/dev/null
	check "c1: one Read of LBAs 100-101 fails with an NVMe error, no bytes returned as read ($(tail -n 1 "$TMP/gb.out"))" \
		test "$(gb_count failed)" = 2
	f1=$(gga_info 'd[0]["counters"]["failed_ios"]')
	check "c1: failed_ios counts that Read ($f0 -> $f1)" test "$f1" -gt "$f0"
	check "c1: the front's log says LBA 100 cannot be decoded" \
		grep -q "lba 100 cannot be decoded" "$D/front.log"
	gb check 1 100:101 >/dev/null
	check "c1: a Read of LBA 100 alone fails ($(tail -n 1 "$TMP/gb.out"))" \
		test "$(gb_count failed)" = 1
	f2=$(gga_info 'd[0]["counters"]["failed_ios"]')
	check "c1: failed_ios counts it too ($f1 -> $f2)" test "$f2" -gt "$f1"
	check "c1: LBA 101 (data_2's fragment corrupt) reads right from data_1 and parity" \
		gb check 1 101:102
	gb check 1 99:100 --nlb 4 >/dev/null
	check "c1: a Read of LBAs 99-102 fails as a whole ($(tail -n 1 "$TMP/gb.out"))" \
		test "$(gb_count failed)" = 4
	check "c1: LBAs 0-99 read right" gb check 1 0:100
	check "c1: LBAs 102-255 read right" gb check 1 102:256
fi

# ---------------------------------------------------------------------------
# 2. Two members blank, the front restarted.
if up_case c2; then
	check "c2: LBAs 0-2047 written" gb write 2 0:2048
	topo stop-target 2 >/dev/null
	topo stop-target 1 >/dev/null
	size=$(stat -c %s "$D/hb1.img")
	for n in 1 2; do
		truncate -s 0 "$D/hb$n.img" && truncate -s "$size" "$D/hb$n.img"
	done
	check "c2: hb1.img and hb2.img blank" \
		bash -c "cmp -s -n $size '$D/hb1.img' /dev/zero && cmp -s -n $size '$D/hb2.img' /dev/zero"
	topo start-target 2 >/dev/null && topo start-target 1 >/dev/null
	check "c2: targets 2 and 1 start on the blank files" test $? -eq 0
	track
	wait_connected hb1 10 && wait_connected hb2 10
	wait_info 10 'd[0]["state"] != "online"' >/dev/null
	gb check 2 0:2048 >/dev/null
	check "c2: with two members blank, no read of LBAs 0-2047 returns SUCCESS ($(tail -n 1 "$TMP/gb.out"))" \
		gb_none_succeeded
	cp "$D/hb0.img" "$TMP/hb0.before"
	topo stop-target front >"$TMP/c2.stop.out" 2>&1
	check "c2: front stops" grep -q 'front stopped' "$TMP/c2.stop.out"
	topo start-target front >"$TMP/c2.start.out" 2>&1
	rc=$?
	track
	# The front may refuse to build gga0 (then nvmf_subsystem_add_ns fails
	# too, and is skipped); either way it should run.
	check "c2: front starts again from its saved configuration (exit $rc)" test $rc -eq 0
	sleep 3
	frpc bdev_gga_get_info '{"name":"gga0"}' >"$TMP/c2.info" 2>&1
	st=absent
	grep -q '"array_uuid"' "$TMP/c2.info" && st=$(jget "$TMP/c2.info" 'd[0]["state"]')
	check "c2: after the front restart gga0 is absent or failed, not online or degraded (gga0 $st)" \
		test "$st" != online -a "$st" != degraded
	gb check 2 0:2048 >/dev/null
	check "c2: no read of LBAs 0-2047 returns SUCCESS ($(tail -n 1 "$TMP/gb.out"))" gb_none_succeeded
	# Repairs run in the background: give them time to do damage.
	sleep 3
	check "c2: hb0.img's data area unchanged across the front restart" \
		same_range "$TMP/hb0.before" "$D/hb0.img" $DATA_OFF $DATA_END
	check "c2: hb0.img's metadata of the data area unchanged" \
		same_range "$TMP/hb0.before" "$D/hb0.img" $((MD_AREA + 32 * 64)) $((MD_AREA + MEMBER_BLOCKS * 64))
	rm -f "$TMP/hb0.before"
fi

# ---------------------------------------------------------------------------
# 3. A dead member must not be reported online. Each kill comes once the front
# has settled, so that no superblock or bitmap write of its own finds the
# target gone for it.
if up_case c3; then
	check "c3: LBAs 0-63 written" gb write 3 0:64
	check "c3: the front settles: all three online, the bitmap clear" settle 30
	# A reader that stops when told to (or after 200 passes).
	rm -f "$TMP/c3.stop"
	(
		for _ in $(seq 1 200); do
			[ -e "$TMP/c3.stop" ] && break
			timeout -k 5 30 python3 "$BLOCKS" check --config "$D/bdevperf.json" --seed 3 --lbas 0:64 ||
				exit 1
		done
	) >"$TMP/c3.reader.out" 2>&1 &
	reader=$!
	PIDS+=("$reader")
	sleep 1
	topo kill-target 2 >/dev/null
	out=$(degraded_within 5 2)
	check "c3: parity target SIGKILLed, the front serving reads only: parity not online and gga0 degraded within 5 s ($out)" \
		test $? -eq 0
	touch "$TMP/c3.stop"
	wait "$reader"
	rc=$?
	check "c3: every read during the kill was right ($(grep -c '0 wrong, 0 failed' "$TMP/c3.reader.out") passes; rc $rc)" \
		test $rc -eq 0
	topo start-target 2 >/dev/null
	track
	check "c3: parity target back; the front settles, all three online" settle 60
	topo kill-target 2 >/dev/null
	sleep 0.5
	cs=$(ctrlr_state hb2)
	check "c3: parity target SIGKILLed with the front idle: its controller is not connected (${cs:-gone})" \
		test "$cs" != connected
	out=$(degraded_within 5 2)
	check "c3: idle front: parity not online and gga0 degraded within 5 s ($out)" test $? -eq 0
	check "c3: LBAs 0-63 read right without parity" gb check 3 0:64
fi

# ---------------------------------------------------------------------------
# 4. An old copy of a member returned.
A=0:512
B=512:1024
if up_case c4; then
	check "c4: set A written" gb write 1 "$A"
	sleep 4
	topo stop-target 1 >/dev/null
	cp "$D/hb1.img" "$TMP/hb1.old"
	# The front notices the member gone (case 3), or at the latest it
	# reconnects; either way it must be online again before set B.
	wait_info 8 'd[0]["members"][1]["state"] != "online"' >/dev/null
	topo start-target 1 >/dev/null
	track
	check "c4: target 1 back; the front settles, all three online before set B" settle 60
	check "c4: set B written with all three online" gb write 2 "$B"
	check "c4: the bitmap clears, the front settles" settle 30
	last=$(gga_info 'd[0]["last_recovery"]')
	topo stop-target 1 >/dev/null
	out=$(degraded_within 5 1)
	check "c4: target 1 stopped with the front idle: data_2 not online, gga0 degraded within 5 s ($out)" \
		test $? -eq 0
	cp "$TMP/hb1.old" "$D/hb1.img"
	rm -f "$TMP/hb1.old"
	topo start-target 1 >/dev/null
	track
	check "c4: the old copy of data_2 back, recovered, all three online" \
		wait_info 60 "d[0]['state'] == 'online' and d[0]['recovery'] is None and d[0]['last_recovery'] != json.loads('$last')"
	nregions=$(python3 "$BLOCKS" regions --lbas 0:1024)
	rec=$(gga_info 'd[0]["last_recovery"] and "%s %s regions %s blocks_copied %s" % (d[0]["last_recovery"]["kind"], d[0]["last_recovery"]["members"], d[0]["last_recovery"]["regions"], d[0]["last_recovery"]["blocks_copied"])')
	check "c4: data_2 rebuilt whole, not resynced over the bitmap ($rec; sets A and B: $nregions regions)" \
		test "$(gga_info "d[0]['last_recovery'] is not None and 'data_2' in d[0]['last_recovery']['members'] and (d[0]['last_recovery']['kind'] == 'rebuild' or d[0]['last_recovery']['regions'] >= $nregions)")" = true
	topo kill-target 0 >/dev/null
	check "c4: set A reads back right without target 0" gb check 1 "$A"
	check "c4: set B reads back right without target 0" gb check 2 "$B"
fi

topo down >"$TMP/down.out" 2>&1
check "down: the daemons still running exit 0" \
	bash -c "grep -q 'exit 0)' '$TMP/down.out' && ! grep -v 'exit 0)' '$TMP/down.out' | grep -q ."
finish
