#!/usr/bin/env bash
# bdevperf end to end over the test bdevs: every workload, verify with and
# without metadata, two cores, JSON output, injected failures and timeouts
# make it fail, bad options are refused. Runs are short: this checks
# behaviour, not speed (that is `make bench`).
source "$(dirname "$0")/common.sh"

BP=$BIN/bdevperf
write_config "$TMP/malloc.json" \
	'{"method":"bdev_malloc_create","params":{"name":"Malloc0","num_blocks":16384,"block_size":4096}}'
write_config "$TMP/md.json" \
	'{"method":"bdev_malloc_create","params":{"name":"Md0","num_blocks":8192,"block_size":512,"md_size":64}}'
write_config "$TMP/two.json" \
	'{"method":"bdev_malloc_create","params":{"name":"Malloc0","num_blocks":8192,"block_size":4096}}' \
	'{"method":"bdev_null_create","params":{"name":"Null0","num_blocks":8192,"block_size":4096}}'

# bp NAME ARGS...: run bdevperf bounded in time, output in $TMP/NAME.out.
bp() {
	local name=$1
	shift
	timeout -k 5 60 "$BP" "$@" >"$TMP/$name.out" 2>&1
}

for w in randread randwrite read write verify flush unmap write_zeroes; do
	bp "$w" --json "$TMP/malloc.json" -m 0x1 -q 16 -o 4096 -w "$w" -t 1
	check "$w: exit 0" test $? -eq 0
	check "$w: results table with a Total row" grep -q '^Total' "$TMP/$w.out"
done
check "IOPS is a positive number in the Total row" \
	awk '/^Total/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { exit !($i > 0) } }' "$TMP/randread.out"
check "table has p50/p99/p99.9 columns" grep -q 'p99.9' "$TMP/randread.out"

bp rw --json "$TMP/malloc.json" -q 8 -o 8192 -w randrw -M 70 -t 1
check "randrw -M 70: exit 0" test $? -eq 0
check_fails "randrw without -M refused" bp rwbad --json "$TMP/malloc.json" -q 8 -o 4096 -w randrw -t 1

bp mdverify --json "$TMP/md.json" -q 8 -o 4096 -w verify -t 1
check "verify on a bdev with 64-byte metadata: exit 0" test $? -eq 0

bp twocores --json "$TMP/two.json" -m 0x3 -C -q 8 -o 4096 -w verify -b Malloc0 -t 1
check "verify on two cores (-C): exit 0" test $? -eq 0
check "-C ran a job on each core" test "$(grep -c '^Job: Malloc0' "$TMP/twocores.out")" = 2
check "-b restricted the jobs to Malloc0" bash -c "! grep -q 'Null0' '$TMP/twocores.out'"

bp json --json "$TMP/malloc.json" -q 4 -o 4096 -w randread -t 1 --output json
check "--output json: exit 0" test $? -eq 0
check "--output json parses and reports IOPS > 0" \
	test "$(jget "$TMP/json.out" 'd["total"]["iops"] > 0 and d["results"][0]["bdev"] == "Malloc0"')" = true

for p in zeros compress:50 random; do
	bp "pat${p%%:*}" --json "$TMP/malloc.json" -q 4 -o 4096 -w verify --pattern "$p" -t 1
	check "verify with --pattern $p: exit 0" test $? -eq 0
done

# --prefill: the jobs write their ranges before the timed run.
bp prefill_read --json "$TMP/malloc.json" -m 0x1 -q 16 -o 4096 -w randread -t 1 --prefill
check "randread --prefill: exit 0" test $? -eq 0
check "randread --prefill: prefilled, then results" \
	bash -c "grep -q '^Prefilling' '$TMP/prefill_read.out' && grep -q '^Total' '$TMP/prefill_read.out'"
bp prefill_verify --json "$TMP/md.json" -m 0x1 -q 8 -o 4096 -w verify -t 1 --prefill
check "verify --prefill (metadata bdev): exit 0" test $? -eq 0
check "verify --prefill: blocks compared, no mismatches" \
	grep -Eq 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$TMP/prefill_verify.out"
bp prefill_json --json "$TMP/two.json" -m 0x3 -C -q 8 -o 8192 -w read -t 1 --prefill --output json
check "read --prefill -C on two bdevs, --output json: exit 0, IOPS > 0" \
	test "$(jget "$TMP/prefill_json.out" 'd["total"]["iops"] > 0 and len(d["results"]) == 4')" = true
# The prefill really writes: a write failure during it fails bdevperf before any run.
write_config "$TMP/preferr.json" \
	'{"method":"bdev_malloc_create","params":{"name":"M","num_blocks":4096,"block_size":4096}}' \
	'{"method":"bdev_error_create","params":{"base_name":"M"}}' \
	'{"method":"bdev_error_inject_error","params":{"name":"EE_M","io_type":"write","error_type":"failure","num":1}}'
bp preferr --json "$TMP/preferr.json" -q 4 -o 4096 -w randread -t 1 --prefill
check "write failure during --prefill: non-zero exit" test $? -ne 0
check "write failure during --prefill: reported, no results" \
	bash -c "grep -q 'prefill failed' '$TMP/preferr.out' && ! grep -q '^Total' '$TMP/preferr.out'"
# SIGINT while a long prefill runs (a 4 TiB null bdev) ends bdevperf promptly.
write_config "$TMP/bignull.json" \
	'{"method":"bdev_null_create","params":{"name":"Null0","num_blocks":1073741824,"block_size":4096}}'
"$BP" --json "$TMP/bignull.json" -m 0x1 -q 8 -o 4096 -w randread -t 1 --prefill \
	>"$TMP/prefint.out" 2>&1 &
pid=$!
PIDS+=("$pid")
sleep 1.5
kill -INT $pid
for i in $(seq 1 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
check "SIGINT during --prefill ends bdevperf within 10 s" bash -c "! kill -0 $pid 2>/dev/null"
wait $pid
rc=$?
check "SIGINT during --prefill: non-zero exit, no results" \
	bash -c "test $rc -ne 0 && ! grep -q '^Total' '$TMP/prefint.out'"

# Injected write failures must fail the run.
write_config "$TMP/err.json" \
	'{"method":"bdev_malloc_create","params":{"name":"M","num_blocks":4096,"block_size":4096}}' \
	'{"method":"bdev_error_create","params":{"base_name":"M"}}' \
	'{"method":"bdev_error_inject_error","params":{"name":"EE_M","io_type":"write","error_type":"failure","num":5}}'
bp err --json "$TMP/err.json" -q 4 -o 4096 -w randwrite -t 1
check "5 injected write failures: non-zero exit" test $? -ne 0
check "failures show in Fail/s" \
	awk '/^Total/ { n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { n++; if (n == 3) exit !($i > 0) } }' "$TMP/err.out"

# I/O that never completes: counted as timeouts, run fails, process exits.
write_config "$TMP/pend.json" \
	'{"method":"bdev_malloc_create","params":{"name":"M","num_blocks":4096,"block_size":4096}}' \
	'{"method":"bdev_error_create","params":{"base_name":"M"}}' \
	'{"method":"bdev_error_inject_error","params":{"name":"EE_M","io_type":"read","error_type":"pending","num":2}}'
start=$(date +%s)
bp pend --json "$TMP/pend.json" -q 4 -o 4096 -w randread -t 1 --io-timeout 500
rc=$?
check "swallowed I/O: non-zero exit (not killed by timeout)" test $rc -ne 0 -a $rc -ne 124 -a $rc -ne 137
check "swallowed I/O: bounded exit ($(( $(date +%s) - start )) s)" test $(($(date +%s) - start)) -lt 30

# Miscompare must be caught: corrupt reads through the error bdev.
write_config "$TMP/corrupt.json" \
	'{"method":"bdev_malloc_create","params":{"name":"M","num_blocks":4096,"block_size":4096}}' \
	'{"method":"bdev_error_create","params":{"base_name":"M"}}' \
	'{"method":"bdev_error_inject_error","params":{"name":"EE_M","io_type":"read","error_type":"corrupt_data","num":1,"corrupt_offset":100,"corrupt_value":255}}'
bp corrupt --json "$TMP/corrupt.json" -q 4 -o 4096 -w verify -t 1
check "corrupted read data: verify fails the run" test $? -ne 0
check "corrupted read data: mismatch reported" grep -qi 'mismatch' "$TMP/corrupt.out"

check_fails "unknown workload refused" bp bad1 --json "$TMP/malloc.json" -q 4 -o 4096 -w sideways -t 1
check_fails "io size not a block multiple refused" bp bad2 --json "$TMP/malloc.json" -q 4 -o 1000 -w read -t 1
check_fails "queue depth 0 refused" bp bad3 --json "$TMP/malloc.json" -q 0 -o 4096 -w read -t 1
check_fails "missing config refused" bp bad4 --json "$TMP/none.json" -q 4 -o 4096 -w read -t 1
check_fails "unknown bdev with -b refused" bp bad5 --json "$TMP/malloc.json" -q 4 -o 4096 -w read -t 1 -b nope

# SIGINT mid-run stops early and still prints results.
"$BP" --json "$TMP/malloc.json" -q 4 -o 4096 -w randread -t 30 >"$TMP/int.out" 2>&1 &
pid=$!
PIDS+=("$pid")
sleep 1.5
kill -INT $pid
for i in $(seq 1 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
check "SIGINT ends bdevperf within 10 s" bash -c "! kill -0 $pid 2>/dev/null"
wait $pid
check "SIGINT: results still printed" grep -q '^Total' "$TMP/int.out"
finish
