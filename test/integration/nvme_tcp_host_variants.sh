#!/usr/bin/env bash
# The NVMe/TCP host against a scripted target (nvme_fake_tgt.py) that uses the
# protocol choices gga_tgt does not make: C2HData split in odd sizes and ended
# with the SUCCESS flag (no CapsuleResp), R2Ts for parts of a write,
# MAXH2CDATA of 4 KiB, no in-capsule data, metadata; and a target that
# swallows a command, which must time out, fail, and be recovered from by a
# controller reset. Listens on 127.0.0.1 only.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/fake_tgt_lib.sh"

# run NAME EXTRA_ATTACH_PARAMS BDEVPERF_ARGS...
run() {
	local name=$1 extra=$2
	shift 2
	write_config "$TMP/$name.json" \
		"{\"method\":\"bdev_nvme_attach_controller\",\"params\":$(fake_attach N0 "$extra")}"
	timeout -k 5 60 "$BIN/bdevperf" --json "$TMP/$name.json" "$@" >"$TMP/$name.log" 2>&1
}

start_fake split --block-size 512 --md-size 64 --icd 0 --maxh2cdata 4096 --r2t-chunk 12288 \
	--c2h-chunk 3000 --c2h-success --num-blocks 8192 || exit 1
run split ',"hdgst":true,"ddgst":true' -q 8 -o 65536 -w verify -t 1
check "verify: split C2HData with SUCCESS, partial R2Ts, 4 KiB H2CData, metadata, digests" \
	test $? -eq 0
check "verify compared blocks without mismatches" \
	grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$TMP/split.log"
check "the fake target saw no protocol error" test ! -s "$TMP/split.err"
run split_nodgst '' -q 8 -o 4096 -w verify -t 1
check "same without digests: exit 0" test $? -eq 0

# The target never answers the 200th read/write: the command times out after
# 1 s, its queue is dropped, the controller resets and I/O continues.
start_fake drop --drop-after 200 || exit 1
run drop ',"timeout_ms":1000' -q 8 -o 4096 -w randwrite -t 4
rc=$?
check "swallowed command: bdevperf fails the run (rc $rc), does not hang" \
	test $rc -ne 0 -a $rc -ne 124 -a $rc -ne 137
check "the command timed out" grep -q 'timed out after 1000 ms' "$TMP/drop.log"
check "the controller reconnected" grep -q 'reconnected' "$TMP/drop.log"
check "I/O went on after the reset (IOPS > 0)" \
	awk '/^Total/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { exit !($i > 0) } }' \
	"$TMP/drop.log"

# A target that refuses digests: a clear error, no bdev.
start_fake nodgst --no-digests || exit 1
run nodgst ',"hdgst":true' -q 1 -o 4096 -w read -t 1
check_fails "attach asking for digests the target refuses fails" test $? -eq 0
check "the error says so" grep -q 'refused header digests' "$TMP/nodgst.log"
finish
