#!/usr/bin/env bash
# gga_tgt and gga_rpc basics: start, the built-in methods, bdev create/get/
# delete for each test module, a second daemon on the same socket refused,
# SIGINT/SIGTERM shut down cleanly (exit 0, socket file removed).
source "$(dirname "$0")/common.sh"

start_tgt t0 -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
ok "gga_tgt starts and says ready"

rpc t0 rpc_get_methods >"$TMP/methods.json"
for m in rpc_get_methods save_config bdev_get_bdevs bdev_get_iostat framework_get_reactors \
	gga_get_version bdev_malloc_create bdev_malloc_delete bdev_null_create bdev_null_delete \
	bdev_error_create bdev_error_delete bdev_error_inject_error; do
	check "rpc_get_methods lists $m" grep -q "\"$m\"" "$TMP/methods.json"
done

rpc t0 gga_get_version >"$TMP/version.json"
check "gga_get_version reports a version" \
	test "$(jget "$TMP/version.json" 'd["version"].startswith("gga v")')" = true

rpc t0 framework_get_reactors >"$TMP/reactors.json"
check "framework_get_reactors lists one reactor on core 0" \
	test "$(jget "$TMP/reactors.json" '[r["lcore"] for r in d["reactors"]]')" = "[0]"

check "bdev_malloc_create returns the name" \
	test "$(rpc t0 bdev_malloc_create --name M0 --num_blocks 2048 --block_size 4096)" = '"M0"'
check "bdev_malloc_create with md_size" \
	test "$(rpc t0 bdev_malloc_create --name M1 --num_blocks 1024 --block_size 2048 --md_size 64)" = '"M1"'
check "bdev_null_create" \
	test "$(rpc t0 bdev_null_create --name N0 --num_blocks 4096 --block_size 512)" = '"N0"'
check "bdev_error_create over M0" \
	test "$(rpc t0 bdev_error_create --base_name M0)" = '"EE_M0"'

# A name that looks like a number stays a string; so does a port.
check "gga_rpc sends a numeric-looking name as a string" \
	test "$(rpc t0 bdev_null_create --name 42 --num_blocks 8 --block_size 512)" = '"42"'
rpc t0 bdev_null_delete --name 42 >/dev/null
"$BIN/gga_rpc" -s "$TMP/t0.sock" -v bdev_nvme_attach_controller --name X --trtype tcp \
	--adrfam ipv4 --traddr 127.0.0.1 --trsvcid 9 --subnqn nqn.2016-06.io.gga:x \
	>/dev/null 2>"$TMP/attach.err"
check "gga_rpc sends --trsvcid 9 as a string" grep -q '"trsvcid":"9"' "$TMP/attach.err"

rpc t0 bdev_get_bdevs >"$TMP/bdevs.json"
check "bdev_get_bdevs lists 4 bdevs in creation order" \
	test "$(jget "$TMP/bdevs.json" '[b["name"] for b in d]')" = '["M0", "M1", "N0", "EE_M0"]'
check "M1 geometry" \
	test "$(jget "$TMP/bdevs.json" '[(b["block_size"], b["md_size"], b["num_blocks"]) for b in d if b["name"] == "M1"]')" = '[[2048, 64, 1024]]'
check "M0 is claimed by the error bdev" \
	test "$(jget "$TMP/bdevs.json" '[b["claimed"] for b in d if b["name"] == "M0"]')" = '[true]'
rpc t0 bdev_get_bdevs --name N0 >"$TMP/n0.json"
check "bdev_get_bdevs --name picks one" \
	test "$(jget "$TMP/n0.json" '[b["name"] for b in d]')" = '["N0"]'
check_fails "bdev_get_bdevs of a missing bdev fails" rpc t0 bdev_get_bdevs --name nope
check_fails "bdev_null_delete refuses a bdev of another module" \
	rpc t0 bdev_null_delete --name M0

rpc t0 bdev_get_iostat >"$TMP/iostat.json"
check "bdev_get_iostat covers every bdev" \
	test "$(jget "$TMP/iostat.json" 'len(d["bdevs"])')" = 4

check "bdev_error_delete" rpc t0 bdev_error_delete --name EE_M0
check "bdev_malloc_delete" rpc t0 bdev_malloc_delete --name M0
check "bdev_null_delete" rpc t0 bdev_null_delete --name N0
check "one bdev left" test "$(rpc t0 bdev_get_bdevs | jget - 'len(d)')" = 1
check_fails "deleting it twice fails" rpc t0 bdev_malloc_delete --name M0

# A second daemon on the same socket must refuse, not steal it.
"$BIN/gga_tgt" -r "$TMP/t0.sock" -m 0x1 >"$TMP/second.log" 2>&1 &
second=$!
PIDS+=("$second")
stop_rc=0
for i in $(seq 1 50); do kill -0 $second 2>/dev/null || break; sleep 0.1; done
if kill -0 $second 2>/dev/null; then
	not_ok "second gga_tgt on the same socket exits"
else
	wait $second
	stop_rc=$?
	check "second gga_tgt on the same socket exits non-zero" test $stop_rc -ne 0
fi
check "first daemon still answers" rpc t0 gga_get_version

stop_tgt "$TGT_PID" INT
check "SIGINT: exit 0" test $? -eq 0
check "SIGINT: socket file removed" test ! -e "$TMP/t0.sock"

start_tgt t1 -m 0x3 || not_ok "gga_tgt on two cores starts"
rpc t1 bdev_malloc_create --name M0 --num_blocks 256 --block_size 512 >/dev/null
check "two reactors" test "$(rpc t1 framework_get_reactors | jget - 'len(d["reactors"])')" = 2
stop_tgt "$TGT_PID" TERM
check "SIGTERM with bdevs configured: exit 0" test $? -eq 0
check "no leaked socket" test ! -e "$TMP/t1.sock"

check_fails "gga_rpc against no daemon fails" "$BIN/gga_rpc" -s "$TMP/none.sock" gga_get_version
check_fails "gga_tgt rejects a bad core mask" "$BIN/gga_tgt" -r "$TMP/bad.sock" -m zz
check_fails "gga_tgt rejects an unknown option" "$BIN/gga_tgt" -r "$TMP/bad.sock" --bogus
finish
