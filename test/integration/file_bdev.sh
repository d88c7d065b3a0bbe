#!/usr/bin/env bash
# File bdev end to end: bdevperf verify with and without metadata, and
# persistence across processes. bdevperf verify cannot compare data across
# processes, so persistence is checked on the file itself: a write run fills
# every block, and the file's sha256 must not change when daemons open it,
# restart from save_config, delete and re-create the bdev, or serve a
# read-only bdevperf run. Geometry and uuid must come back the same, from
# the saved configuration and (with metadata) from the file's own header.
source "$(dirname "$0")/common.sh"

BP=$BIN/bdevperf

# bp NAME ARGS...: run bdevperf bounded in time, output in $TMP/NAME.out.
bp() {
	local name=$1
	shift
	timeout -k 5 60 "$BP" "$@" >"$TMP/$name.out" 2>&1
}

# bp_ok NAME: bdevperf run NAME exited 0 with a Total row and no mismatches.
bp_ok() {
	grep -q '^Total' "$TMP/$1.out" && ! grep -q ' [1-9][0-9]* mismatches' "$TMP/$1.out"
}

quiet() {
	"$@" >/dev/null
}

sha() {
	sha256sum "$1" | cut -d' ' -f1
}

# Every 4 KiB block of the data area [start, start + len) holds something.
all_blocks_written() {
	python3 -c 'import sys
f = open(sys.argv[1], "rb"); start = int(sys.argv[2]); n = int(sys.argv[3])
f.seek(start)
for i in range(n):
    if f.read(4096).count(0) == 4096:
        print("block", i, "is all zeros"); sys.exit(1)' "$@"
}

# bdev_field SOCK NAME EXPR: a field of bdev NAME from bdev_get_bdevs.
bdev_field() {
	rpc "$1" bdev_get_bdevs >"$TMP/bdevs.json" || return 1
	jget "$TMP/bdevs.json" "[b for b in d if b['name'] == '$2'][0]$3"
}

# 1. bdevperf verify, without and with metadata, 2 s each.
write_config "$TMP/verify.json" \
	"{\"method\":\"bdev_file_create\",\"params\":{\"name\":\"F0\",\"filename\":\"$TMP/v0.img\",\"block_size\":4096,\"num_blocks\":16384}}" \
	"{\"method\":\"bdev_file_create\",\"params\":{\"name\":\"F1\",\"filename\":\"$TMP/v1.img\",\"block_size\":512,\"md_size\":64,\"num_blocks\":65536}}"
bp verify0 --json "$TMP/verify.json" -m 0x1 -q 32 -o 4096 -w verify -b F0 -t 2
check "verify on a file bdev without metadata: exit 0" test $? -eq 0
check "verify without metadata: compared, no mismatches" bp_ok verify0
bp verify1 --json "$TMP/verify.json" -m 0x1 -q 32 -o 4096 -w verify -b F1 -t 2
check "verify on a file bdev with 64-byte metadata: exit 0" test $? -eq 0
check "verify with metadata: compared, no mismatches" bp_ok verify1
bp verifybig --json "$TMP/verify.json" -m 0x3 -C -q 8 -o 256k -w verify -t 2
check "verify with 256 KiB I/O on two cores, both bdevs: exit 0" test $? -eq 0
for w in flush unmap write_zeroes; do
	bp "$w" --json "$TMP/verify.json" -m 0x1 -q 8 -o 4096 -w "$w" -t 1
	check "$w on file bdevs: exit 0" test $? -eq 0
done

# 2. Persistence, for a raw file and for one with metadata.
persist() {
	local tag=$1 md=$2 bs=4096 nb=1024 img=$TMP/p$2.img name=P$2
	local h0 uuid nbk start pid_a
	write_config "$TMP/$tag-new.json" \
		"{\"method\":\"bdev_file_create\",\"params\":{\"name\":\"$name\",\"filename\":\"$img\",\"block_size\":$bs,\"md_size\":$md,\"num_blocks\":$nb}}"
	# Reopening a formatted file needs neither geometry nor uuid; a raw one needs its block size.
	if [ "$md" -gt 0 ]; then
		write_config "$TMP/$tag-open.json" \
			"{\"method\":\"bdev_file_create\",\"params\":{\"name\":\"$name\",\"filename\":\"$img\",\"md_size\":$md,\"create\":false}}"
		start=4096
	else
		write_config "$TMP/$tag-open.json" \
			"{\"method\":\"bdev_file_create\",\"params\":{\"name\":\"$name\",\"filename\":\"$img\",\"block_size\":$bs,\"create\":false}}"
		start=0
	fi

	bp "$tag-write" --json "$TMP/$tag-new.json" -m 0x1 -q 16 -o 4096 -w write \
		--pattern compress:50 --seed 7 -t 1
	check "$tag: bdevperf write run: exit 0" test $? -eq 0
	check "$tag: every block of the data area was written" all_blocks_written "$img" $start $nb
	h0=$(sha "$img")

	start_tgt "$tag-a" -m 0x1 --json "$TMP/$tag-open.json" || {
		not_ok "$tag: daemon A opens the file"
		return
	}
	pid_a=$TGT_PID
	uuid=$(bdev_field "$tag-a" "$name" '["uuid"]')
	nbk=$(bdev_field "$tag-a" "$name" '["num_blocks"]')
	check "$tag: geometry read back from the file ($nbk blocks)" test "$nbk" = $nb
	check "$tag: md_size $md" test "$(bdev_field "$tag-a" "$name" '["md_size"]')" = "$md"
	rpc "$tag-a" save_config >"$TMP/$tag-saved.json"
	check "$tag: save_config has bdev_file_create with the uuid and create false" \
		test "$(jget "$TMP/$tag-saved.json" "[c['params'] for s in d['subsystems'] if s['subsystem'] == 'bdev' for c in s['config'] if c['method'] == 'bdev_file_create'][0]" |
			python3 -c 'import json,sys; p = json.load(sys.stdin); print(p["uuid"], p["create"], p["num_blocks"])')" \
		= "$uuid False $nb"
	# A second daemon cannot take the same file while A holds it.
	start_tgt "$tag-x" -m 0x1 || not_ok "$tag: daemon X starts"
	check_fails "$tag: a second daemon cannot open the same file" \
		rpc "$tag-x" bdev_file_create --name X --filename "$img" --block_size $bs --md_size "$md"
	rpc "$tag-x" bdev_file_create --name X --filename "$img" --block_size $bs --md_size "$md" \
		2>"$TMP/$tag-x.err" >/dev/null
	check "$tag: ... with a message saying it is in use" grep -q "in use" "$TMP/$tag-x.err"
	stop_tgt "$TGT_PID"
	stop_tgt "$pid_a"
	check "$tag: daemon A exits 0" test $? -eq 0
	check "$tag: file unchanged after daemon A" test "$(sha "$img")" = "$h0"

	start_tgt "$tag-b" -m 0x1 --json "$TMP/$tag-saved.json" || {
		not_ok "$tag: daemon B starts from the saved config"
		return
	}
	check "$tag: same uuid after restart from save_config" \
		test "$(bdev_field "$tag-b" "$name" '["uuid"]')" = "$uuid"
	check "$tag: bdev_file_delete answers true" quiet rpc "$tag-b" bdev_file_delete --name "$name"
	check "$tag: the bdev is gone" bash -c "! $BIN/gga_rpc -s $TMP/$tag-b.sock bdev_get_bdevs | grep -q '\"$name\"'"
	check "$tag: the file is left intact after bdev_file_delete" test "$(sha "$img")" = "$h0"
	if [ "$md" -gt 0 ]; then
		check_fails "$tag: reopening with another md_size is refused" \
			rpc "$tag-b" bdev_file_create --name "$name" --filename "$img" --md_size 8 --create false
		check_fails "$tag: reopening with another block_size is refused" \
			rpc "$tag-b" bdev_file_create --name "$name" --filename "$img" --block_size 512 --md_size "$md" --create false
		check "$tag: re-created from the header alone: same uuid" bash -c \
			"$BIN/gga_rpc -s $TMP/$tag-b.sock bdev_file_create --name $name --filename $img --md_size $md --create false >/dev/null &&
			 $BIN/gga_rpc -s $TMP/$tag-b.sock bdev_get_bdevs | grep -q '$uuid'"
	else
		check "$tag: re-created by RPC" \
			quiet rpc "$tag-b" bdev_file_create --name "$name" --filename "$img" --block_size $bs --create false
	fi
	stop_tgt "$TGT_PID"
	check "$tag: daemon B exits 0" test $? -eq 0
	check "$tag: file unchanged after restart, delete and re-create" test "$(sha "$img")" = "$h0"

	bp "$tag-read" --json "$TMP/$tag-saved.json" -m 0x1 -q 16 -o 4096 -w randread -t 1
	check "$tag: bdevperf read-only run from the saved config: exit 0" test $? -eq 0
	check "$tag: file unchanged after the read run" test "$(sha "$img")" = "$h0"
}

persist raw 0
persist md 64

# 3. Errors come back as RPC errors that say what is wrong; nothing is left behind.
start_tgt err -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
check_fails "missing file with create false refused" \
	rpc err bdev_file_create --name E --filename "$TMP/none.img" --block_size 4096 --num_blocks 8 --create false
check "... and not created" test ! -e "$TMP/none.img"
rpc err bdev_file_create --name E --filename "$TMP/none.img" --block_size 1000 --num_blocks 8 \
	2>"$TMP/e1.err" >/dev/null
check "bad block_size: message names it" grep -q block_size "$TMP/e1.err"
check "... and nothing created" test ! -e "$TMP/none.img"
check_fails "a directory is refused" rpc err bdev_file_create --name E --filename "$TMP" --block_size 4096
check "the daemon has no bdev left over" test "$(rpc err bdev_get_bdevs | tr -d ' \n')" = "[]"
stop_tgt "$TGT_PID"
check "daemon exits 0" test $? -eq 0
finish
