#!/usr/bin/env bash
# The keyring through gga_tgt: keyring_file_add_key, keyring_get_keys and
# keyring_file_remove_key with SPDK's answers and error codes (duplicate,
# relative path, missing file, loose permissions, not a regular file, too
# big, unknown key), refused calls leave nothing behind, save_config writes
# the keys first and only as {name, path}, a restart with --json brings them
# back (and a bad key file in the --json file stops the start-up), and the
# key material is in no answer, no saved configuration and no log line.
source "$(dirname "$0")/common.sh"

MATERIAL="DHHC-1:00:a2V5cmluZy1zaC1pbnRlZ3JhdGlvbi10ZXN0LXNlY3JldA==:"
# The middle of it, so that a partial leak is found too.
SECRET_PART="a2V5cmluZy1zaC1pbnRlZ3JhdGlvbi10ZXN0"
KEYS=$TMP/keys
mkdir -m 700 "$KEYS"

# key_file NAME MODE TEXT: a key file holding TEXT and a newline.
key_file() {
	printf '%s\n' "$3" >"$KEYS/$1"
	chmod "$2" "$KEYS/$1"
}
key_file key0 600 "$MATERIAL"
key_file key1 600 "1-$MATERIAL"
key_file key2 400 "2-$MATERIAL"
key_file loose 644 "$MATERIAL"
head -c 5000 /dev/zero | tr '\0' k >"$KEYS/big"
chmod 600 "$KEYS/big"

# rpc_out SOCK ARGS...: gga_rpc's answer or its "error CODE: MESSAGE" line.
rpc_out() {
	rpc "$@" 2>&1
}

# no_material FILE...: none of the files holds the material or a piece of it.
no_material() {
	! grep -q -F -e "$MATERIAL" -e "$SECRET_PART" "$@"
}

start_tgt a -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
A_PID=$TGT_PID

rpc a rpc_get_methods >"$TMP/methods.json"
for m in keyring_file_add_key keyring_file_remove_key keyring_get_keys; do
	check "rpc_get_methods lists $m" grep -q "\"$m\"" "$TMP/methods.json"
done
check "keyring_get_keys is empty at start" test "$(rpc_out a keyring_get_keys)" = "[]"

check "keyring_file_add_key key0 answers true" \
	test "$(rpc_out a keyring_file_add_key --name key0 --path "$KEYS/key0")" = true
check "keyring_file_add_key key1 answers true" \
	test "$(rpc_out a keyring_file_add_key --name key1 --path "$KEYS/key1")" = true

rpc a keyring_get_keys >"$TMP/keys-a.json"
check "keyring_get_keys lists key0 and key1 as SPDK does" \
	test "$(jget "$TMP/keys-a.json" '[(k["name"], k["module"], k["removed"], k["probed"], k["refcnt"], k["path"]) for k in d]')" \
	= "$(python3 -c 'import json, sys; print(json.dumps([[n, "keyring_file", False, False, 1, sys.argv[1] + "/" + n] for n in ("key0", "key1")]))' "$KEYS")"
check "keyring_get_keys has exactly SPDK's fields" \
	test "$(jget "$TMP/keys-a.json" 'sorted(d[0])')" = '["module", "name", "path", "probed", "refcnt", "removed"]'

# Refusals: SPDK's codes, messages that name the key and the file.
check "duplicate name: -17" \
	test "$(rpc_out a keyring_file_add_key --name key0 --path "$KEYS/key1")" = "error -17: key 'key0' already exists"
check "relative path: -1 (EPERM, as SPDK)" \
	test "$(rpc_out a keyring_file_add_key --name k9 --path keys/key0)" = "error -1: key 'k9': path 'keys/key0' is not absolute"
out=$(rpc_out a keyring_file_add_key --name k9 --path "$KEYS/loose")
check "mode 0644: -1, naming the path and the mode" \
	test "$out" = "error -1: key 'k9': key file '$KEYS/loose' has mode 0644; 0600 required (no group or other permission bits)"
check "missing file: -2 (ENOENT)" \
	test "$(rpc_out a keyring_file_add_key --name k9 --path "$KEYS/none")" = "error -2: key 'k9': cannot open key file '$KEYS/none': No such file or directory"
check "a directory: -32602" \
	test "$(rpc_out a keyring_file_add_key --name k9 --path "$KEYS")" = "error -32602: key 'k9': key file '$KEYS' is a directory, not a regular file"
check "a 5000-byte file: -27 (EFBIG)" \
	test "$(rpc_out a keyring_file_add_key --name k9 --path "$KEYS/big")" = "error -27: key 'k9': key file '$KEYS/big' has 5000 bytes; at most 4096 allowed"
check "another keyring's name: -32602" \
	test "$(rpc_out a keyring_file_add_key --name ring:k9 --path "$KEYS/key2" | cut -d: -f1)" = "error -32602"
check "no path: -32602 path: required" \
	test "$(rpc_out a keyring_file_add_key --name k9)" = "error -32602: path: required"
check "unknown key removed: -126 (ENOKEY)" \
	test "$(rpc_out a keyring_file_remove_key --name k9)" = "error -126: key 'k9' does not exist"
# Raw requests: an unknown parameter, and parameters to keyring_get_keys.
out=$(python3 "$GGA_ROOT/test/integration/rpc_client.py" "$TMP/a.sock" send \
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"keyring_file_add_key\",\"params\":{\"name\":\"k9\",\"path\":\"$KEYS/key2\",\"key\":\"x\"}}")
check "raw: an unknown parameter is refused (-32602)" \
	test "$(echo "$out" | jget - '[d["id"], d["error"]["code"], d["error"]["message"]]')" = "[7, -32602, \"unknown parameter 'key'\"]"
out=$(python3 "$GGA_ROOT/test/integration/rpc_client.py" "$TMP/a.sock" send \
	'{"jsonrpc":"2.0","id":8,"method":"keyring_get_keys","params":{"name":"key0"}}')
check "raw: keyring_get_keys takes no parameter (-32602)" \
	test "$(echo "$out" | jget - 'd["error"]["code"]')" = -32602
rpc a keyring_get_keys >"$TMP/keys-a2.json"
check "refused calls added nothing" cmp -s "$TMP/keys-a.json" "$TMP/keys-a2.json"

check "keyring_file_remove_key key1 answers true" \
	test "$(rpc_out a keyring_file_remove_key --name key1)" = true
check "key1 is gone from keyring_get_keys" \
	test "$(rpc a keyring_get_keys | jget - '[k["name"] for k in d]')" = '["key0"]'
check "key1 can be added again" \
	test "$(rpc_out a keyring_file_add_key --name key1 --path "$KEYS/key1")" = true
check "key2 (mode 0400) added" \
	test "$(rpc_out a keyring_file_add_key --name key2 --path "$KEYS/key2")" = true
rpc a keyring_file_remove_key --name key1 >/dev/null
rpc a bdev_malloc_create --name M0 --num_blocks 64 --block_size 4096 >/dev/null

# save_config: keyring first (what follows names keys), {name, path} only.
rpc a save_config >"$TMP/config.json"
check "save_config: keyring, then bdev, then nvmf" \
	test "$(jget "$TMP/config.json" '[s["subsystem"] for s in d["subsystems"]]')" = '["keyring", "bdev", "nvmf"]'
check "save_config: one keyring_file_add_key {name, path} per live key, in order" \
	test "$(jget "$TMP/config.json" '[(c["method"], sorted(c["params"]), c["params"]["name"]) for c in d["subsystems"][0]["config"]]')" \
	= '[["keyring_file_add_key", ["name", "path"], "key0"], ["keyring_file_add_key", ["name", "path"], "key2"]]'
rpc a framework_get_config --name keyring >"$TMP/fgc.json"
check "framework_get_config keyring: the same calls" \
	test "$(jget "$TMP/fgc.json" d)" = "$(jget "$TMP/config.json" 'd["subsystems"][0]["config"]')"
rpc a keyring_get_keys >"$TMP/keys-a3.json"

# A restart from the saved configuration: the keys are back.
start_tgt b -m 0x1 --json "$TMP/config.json" || not_ok "gga_tgt b starts from the saved config"
B_PID=$TGT_PID
rpc b keyring_get_keys >"$TMP/keys-b.json"
check "restart with --json: the same keys" cmp -s "$TMP/keys-a3.json" "$TMP/keys-b.json"
rpc b save_config >"$TMP/config-b.json"
check "restart with --json: the same save_config" \
	test "$(jget "$TMP/config.json" d)" = "$(jget "$TMP/config-b.json" d)"
check "gga_tgt b exits 0 on SIGTERM" stop_tgt "$B_PID"

# A --json file whose key file went loose: start-up stops, naming it.
chmod 640 "$KEYS/key2"
"$BIN/gga_tgt" -r "$TMP/c.sock" -m 0x1 --json "$TMP/config.json" >"$TMP/c.log" 2>&1 &
pid=$!
PIDS+=("$pid")
for i in $(seq 1 100); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
# Still up after 10 s: it took the file; stop it (143 fails the check below).
kill -0 "$pid" 2>/dev/null && kill -TERM "$pid"
wait "$pid"
rc=$?
check "--json with a mode-0640 key file: start-up fails (exit $rc)" test $rc -ne 0 -a $rc -ne 143
check "... the log names the key file and its mode" grep -q "key file '$KEYS/key2' has mode 0640" "$TMP/c.log"
chmod 400 "$KEYS/key2"

stop_tgt "$A_PID"
check "gga_tgt a exits 0 on SIGTERM" test $? -eq 0

# The material: in no answer, no configuration, no log.
check "no key material in the answers and saved configurations" \
	no_material "$TMP"/keys-*.json "$TMP"/config*.json "$TMP/fgc.json"
check "no key material in the daemons' logs" no_material "$TMP/a.log" "$TMP/b.log" "$TMP/c.log"
check_fails "no sanitizer report in the logs" grep -q "runtime error\|Sanitizer" "$TMP"/*.log
finish
