#!/usr/bin/env bash
# The gga bdev end to end: bdevperf verify over three malloc members (each
# under an error bdev) with periodic recovery reads off, every read and every
# third read; a member failed mid-run (the run still passes, the member shows
# failed); two members failed (the run fails with I/O errors, never with a
# verify mismatch); save_config into a second daemon; create refusals through
# RPC leave nothing behind. bdevperf runs are 2-3 s each.
source "$(dirname "$0")/common.sh"

BP=$BIN/bdevperf

# config FILE EVERY_N: three members of 2048 + 64 bytes (4 KiB logical blocks) under EE_ bdevs.
config() {
	write_config "$1" \
		'{"method":"bdev_malloc_create","params":{"name":"M1","num_blocks":8224,"block_size":2048,"md_size":64}}' \
		'{"method":"bdev_malloc_create","params":{"name":"M2","num_blocks":8224,"block_size":2048,"md_size":64}}' \
		'{"method":"bdev_malloc_create","params":{"name":"M3","num_blocks":8224,"block_size":2048,"md_size":64}}' \
		'{"method":"bdev_error_create","params":{"base_name":"M1"}}' \
		'{"method":"bdev_error_create","params":{"base_name":"M2"}}' \
		'{"method":"bdev_error_create","params":{"base_name":"M3"}}' \
		"{\"method\":\"bdev_gga_create\",\"params\":{\"name\":\"gga0\",\"data_1\":\"EE_M1\",\"data_2\":\"EE_M2\",\"parity\":\"EE_M3\",\"recovery_read_every_n\":$2}}"
}

# bp NAME ARGS...: bdevperf on gga0, bounded in time, output in $TMP/NAME.out.
bp() {
	local name=$1
	shift
	timeout -k 5 60 "$BP" -b gga0 -q 32 -o 4096 "$@" >"$TMP/$name.out" 2>&1
}

no_mismatch() {
	grep -q 'verify: [0-9]* blocks compared, 0 mismatches' "$1" && ! grep -qi 'verify mismatch in' "$1"
}

for n in 0 1 3; do
	config "$TMP/n$n.json" $n
	bp "verify$n" --json "$TMP/n$n.json" -w verify -t 2
	check "verify, recovery_read_every_n $n: exit 0" test $? -eq 0
	check "verify, recovery_read_every_n $n: blocks compared, 0 mismatches" no_mismatch "$TMP/verify$n.out"
done
bp pattern --json "$TMP/n1.json" -w verify -t 1 --pattern compress:50
check "verify of compressible data, every read a recovery read: exit 0" test $? -eq 0

# One member fails mid-run: the run passes and the member shows failed.
"$BP" -b gga0 -q 32 -o 4096 --json "$TMP/n3.json" -r "$TMP/bp1.sock" -w verify -t 3 \
	>"$TMP/fail1.out" 2>&1 &
pid=$!
PIDS+=("$pid")
sleep 1
rpc bp1 -w -t 10 bdev_error_inject_error --name EE_M1 --io_type all --error_type failure \
	--num 0 >/dev/null
check "inject failure on EE_M1 mid-run" test $? -eq 0
sleep 0.5
rpc bp1 bdev_gga_get_info --name gga0 >"$TMP/info1.json"
check "bdev_gga_get_info: data_1 failed, array degraded" \
	test "$(jget "$TMP/info1.json" '[d[0]["members"][0]["state"], d[0]["members"][1]["state"], d[0]["state"]]')" \
	= '["failed", "online", "degraded"]'
check "bdev_gga_get_info: member I/O errors and forced recovery reads counted" \
	test "$(jget "$TMP/info1.json" 'd[0]["counters"]["member_io_errors"] > 0 and d[0]["counters"]["recovery_reads_forced"] > 0 and d[0]["counters"]["failed_ios"] == 0')" = true
wait $pid
rc=$?
check "one member failed mid-run: bdevperf exit 0" test $rc -eq 0
check "one member failed mid-run: 0 mismatches, 0 failed I/Os" \
	bash -c "grep -q 'verify: [0-9]* blocks compared, 0 mismatches' '$TMP/fail1.out' && ! grep -q 'run failed' '$TMP/fail1.out'"
check "the failed member is logged once" test "$(grep -c "member data_1 'EE_M1': online -> failed" "$TMP/fail1.out")" = 1

# Two members fail mid-run: I/O errors, never wrong data.
"$BP" -b gga0 -q 32 -o 4096 --json "$TMP/n0.json" -r "$TMP/bp2.sock" -w verify -t 2 \
	>"$TMP/fail2.out" 2>&1 &
pid=$!
PIDS+=("$pid")
sleep 0.8
rpc bp2 -w -t 10 bdev_error_inject_error --name EE_M1 --io_type all --error_type failure \
	--num 0 >/dev/null
rpc bp2 bdev_error_inject_error --name EE_M3 --io_type all --error_type failure --num 0 >/dev/null
rpc bp2 bdev_gga_get_info --name gga0 >"$TMP/info2.json"
wait $pid
rc=$?
check "two members failed: bdevperf fails (exit $rc)" test $rc -ne 0 -a $rc -ne 124 -a $rc -ne 137
check "two members failed: failed I/Os reported" grep -q 'run failed: [1-9][0-9]* failed I/Os' "$TMP/fail2.out"
check "two members failed: no verify mismatch" \
	bash -c "grep -q ', 0 verify mismatches' '$TMP/fail2.out' && ! grep -qi 'verify mismatch in' '$TMP/fail2.out'"
check "two members failed: array state failed" \
	test "$(jget "$TMP/info2.json" 'd[0]["state"]')" = failed

# gga_tgt: save_config recreates the gga bdev in a second daemon.
config "$TMP/tgt.json" 2
start_tgt a -m 0x1 --json "$TMP/tgt.json" || {
	not_ok "daemon A starts with a gga bdev"
	finish
}
rpc a bdev_get_bdevs >"$TMP/a.json"
check "gga0 is a 4 KiB bdev of 8192 blocks, members claimed" \
	test "$(jget "$TMP/a.json" '[[b["block_size"], b["num_blocks"]] for b in d if b["name"] == "gga0"] + [b["claimed"] for b in d if b["name"].startswith("EE_")]')" \
	= '[[4096, 8192], true, true, true]'
rpc a save_config >"$TMP/saved.json"
check "save_config has bdev_gga_create after its bases" \
	test "$(jget "$TMP/saved.json" '[c["method"] for s in d["subsystems"] if s["subsystem"] == "bdev" for c in s["config"]][-1]')" \
	= bdev_gga_create
start_tgt b -m 0x1 --json "$TMP/saved.json" || not_ok "daemon B starts from A's saved config"
rpc b bdev_get_bdevs >"$TMP/b.json"
check "B has the same bdevs as A (gga0 with the same uuid and members)" \
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a != b)' \
	"$TMP/a.json" "$TMP/b.json"
rpc b bdev_gga_get_info >"$TMP/binfo.json"
check "B: bdev_gga_get_info lists gga0 online with recovery_read_every_n 2" \
	test "$(jget "$TMP/binfo.json" '[d[0]["name"], d[0]["state"], d[0]["recovery_read_every_n"]]')" \
	= '["gga0", "online", 2]'

# Create refusals through RPC: an error naming the problem, nothing left behind.
rpc a bdev_malloc_create --name X1 --num_blocks 2080 --block_size 2048 --md_size 64 >/dev/null
rpc a bdev_malloc_create --name X2 --num_blocks 2080 --block_size 2048 --md_size 64 >/dev/null
rpc a bdev_malloc_create --name X3 --num_blocks 2080 --block_size 2048 --md_size 32 >/dev/null
rpc a bdev_malloc_create --name X4 --num_blocks 2080 --block_size 2048 --md_size 64 >/dev/null
rpc a bdev_gga_create --name bad --data_1 X1 --data_2 X2 --parity X3 >/dev/null 2>"$TMP/err1"
check "members with different md_size: refused" test $? -eq 1
check "  ... naming the member and both values" grep -q "parity 'X3' has md_size 32, data_1 'X1' has 64" "$TMP/err1"
rpc a bdev_gga_create --name bad --data_1 X1 --data_2 X2 --parity nope >/dev/null 2>"$TMP/err2"
check "missing base: refused naming it" grep -q "parity 'nope'" "$TMP/err2"
rpc a bdev_gga_create --name g2 --data_1 X1 --data_2 X2 --parity X4 >/dev/null
check "a good create over X1 X2 X4" test $? -eq 0
rpc a bdev_gga_delete --name g2 >/dev/null
rpc a bdev_gga_create --name bad --data_1 X2 --data_2 X1 --parity X4 >/dev/null 2>"$TMP/err3"
check "swapped roles: refused" grep -q "data_1 'X2' is the data_2 member of array" "$TMP/err3"
rpc a bdev_gga_create --name bad --data_1 X1 --data_2 X2 --parity EE_M3 >/dev/null 2>"$TMP/err4"
check "a base claimed by another gga bdev: refused" grep -q "claimed" "$TMP/err4"
rpc a bdev_get_bdevs >"$TMP/after.json"
check "no gga bdev 'bad' left, X1 X2 X4 unclaimed" \
	test "$(jget "$TMP/after.json" '[b["name"] for b in d if b["name"] == "bad"] + [b["claimed"] for b in d if b["name"] in ("X1", "X2", "X4")]')" \
	= '[false, false, false]'
rpc a bdev_gga_create --name g2 --data_1 X1 --data_2 X2 --parity X4 --mode assemble >/dev/null
check "the refusals wrote nothing: X1 X2 X4 assemble again" test $? -eq 0
rpc a bdev_gga_delete --name g2 >/dev/null
check "bdev_gga_delete of an unknown bdev fails" bash -c "! '$BIN/gga_rpc' -s '$TMP/a.sock' bdev_gga_delete --name g2 2>/dev/null"
finish
