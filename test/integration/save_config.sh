#!/usr/bin/env bash
# save_config output restarts a second daemon into the same state, and a
# --json file with an error aborts start-up cleanly.
source "$(dirname "$0")/common.sh"

start_tgt a -m 0x1 || {
	not_ok "daemon A starts"
	finish
}
rpc a bdev_malloc_create --name Data0 --num_blocks 4096 --block_size 4096 >/dev/null
rpc a bdev_malloc_create --name Md0 --num_blocks 1024 --block_size 2048 --md_size 64 \
	--uuid 3f0c6d2e-5a43-4b0e-9c33-1f2e3d4c5b6a >/dev/null
rpc a bdev_null_create --name Null0 --num_blocks 100000 --block_size 512 >/dev/null
rpc a bdev_error_create --base_name Md0 >/dev/null
rpc a bdev_malloc_create --name Gone --num_blocks 8 --block_size 512 >/dev/null
rpc a bdev_malloc_delete --name Gone >/dev/null

rpc a save_config >"$TMP/config.json"
# The keyring comes first: bdevs and nvmf hosts name its keys.
check "save_config has the keyring, bdev and nvmf subsystems, in that order" \
	test "$(jget "$TMP/config.json" '[s["subsystem"] for s in d["subsystems"]]')" = '["keyring", "bdev", "nvmf"]'
check "save_config has one create call per bdev, in order" \
	test "$(jget "$TMP/config.json" '[c["method"] for s in d["subsystems"] if s["subsystem"] == "bdev" for c in s["config"] if c["method"].endswith("_create")]')" \
	= '["bdev_malloc_create", "bdev_malloc_create", "bdev_null_create", "bdev_error_create"]'
rpc a bdev_get_bdevs >"$TMP/a.json"

start_tgt b -m 0x1 --json "$TMP/config.json" || not_ok "daemon B starts from the saved config"
rpc b bdev_get_bdevs >"$TMP/b.json"
check "B has the same bdevs, geometry, uuids and claims as A" \
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a != b)' \
	"$TMP/a.json" "$TMP/b.json"
rpc b save_config >"$TMP/config-b.json"
check "B saves the same config A did" \
	python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
	"$TMP/config.json" "$TMP/config-b.json"
check "uuid given at create survived the round trip" \
	test "$(jget "$TMP/b.json" '[b["uuid"] for b in d if b["name"] == "Md0"][0]')" = 3f0c6d2e-5a43-4b0e-9c33-1f2e3d4c5b6a

# A config whose second call fails: start-up fails, exit non-zero, no socket left.
write_config "$TMP/bad.json" \
	'{"method":"bdev_malloc_create","params":{"name":"X","num_blocks":8,"block_size":512}}' \
	'{"method":"bdev_malloc_create","params":{"name":"Y","num_blocks":8,"block_size":1000}}'
"$BIN/gga_tgt" -r "$TMP/bad.sock" -m 0x1 --json "$TMP/bad.json" >"$TMP/bad.log" 2>&1 &
pid=$!
PIDS+=("$pid")
for i in $(seq 1 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
wait $pid
rc=$?
check "bad --json config: non-zero exit" test $rc -ne 0 -a $rc -ne 143
check "bad --json config: message names the method" grep -q bdev_malloc_create "$TMP/bad.log"
check "bad --json config: socket removed" test ! -e "$TMP/bad.sock"
# The same file with --json-ignore-init-errors: the failed call is logged and
# skipped, the calls around it run, and the daemon serves.
write_config "$TMP/bad3.json" \
	'{"method":"bdev_malloc_create","params":{"name":"X","num_blocks":8,"block_size":512}}' \
	'{"method":"bdev_malloc_create","params":{"name":"Y","num_blocks":8,"block_size":1000}}' \
	'{"method":"bdev_malloc_create","params":{"name":"Z","num_blocks":8,"block_size":512}}'
if start_tgt ign -m 0x1 --json "$TMP/bad3.json" --json-ignore-init-errors; then
	ok "--json-ignore-init-errors: the daemon comes up past a failed call"
	rpc ign bdev_get_bdevs >"$TMP/ign.json"
	check "--json-ignore-init-errors: the calls before and after the failed one ran" \
		test "$(jget "$TMP/ign.json" 'sorted(b["name"] for b in d)')" = '["X", "Z"]'
	check "--json-ignore-init-errors: the failed call and the count are logged" \
		grep -q '1 of 3 calls failed and were skipped' "$TMP/ign.log"
	check "--json-ignore-init-errors: SIGTERM exit 0" stop_tgt "$TGT_PID"
else
	not_ok "--json-ignore-init-errors: the daemon comes up past a failed call"
fi
echo '{"subsystems": [' >"$TMP/broken.json"
check_fails "unparsable --json file refused" timeout 10 "$BIN/gga_tgt" -r "$TMP/bad2.sock" --json "$TMP/broken.json"
check_fails "missing --json file refused" timeout 10 "$BIN/gga_tgt" -r "$TMP/bad3.sock" --json "$TMP/nope.json"
finish
