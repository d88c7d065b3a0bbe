#!/usr/bin/env bash
# SPDK's own client drives gga_tgt unchanged: the exact requests SPDK's
# scripts/rpc.py sends (test/integration/spdk_rpc/rpc_py_requests.json, with
# the SPDK version they were captured from) are replayed in order, create
# before use; features gga lacks are refused with -32602 "... not supported by
# gga", unknown parameters with -32602, and a refused call changes nothing.
# With SPDK_DIR set to an SPDK source tree, rpc.py itself is run as well
# (never in CI, which has no SPDK).
source "$(dirname "$0")/common.sh"

FIXTURES=$GGA_ROOT/test/integration/spdk_rpc/rpc_py_requests.json
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The key file keyring_file_add_key names (the fixtures' captured path is replaced by it).
KEY_FILE=$TMP/key0
# A DH-HMAC-CHAP secret (32 bytes and their CRC-32): nvmf_subsystem_add_host names it.
printf 'DHHC-1:00:c3Bkay1ycGMtY29tcGF0LXRlc3Qta2V5LTMyLWJ5dGW6Q+7r:\n' >"$KEY_FILE"
chmod 600 "$KEY_FILE"

start_tgt t0 -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
check "rpc.py's requests replayed against gga_tgt" \
	timeout -k 5 120 python3 "$GGA_ROOT/test/integration/spdk_rpc/replay.py" "$TMP/t0.sock" \
	"$FIXTURES" "$PORT" "$KEY_FILE"

if [ -n "${SPDK_DIR:-}" ]; then
	NQN=nqn.2016-06.io.spdk:cnode9
	spdk_rpc() { timeout -k 5 60 python3 "$SPDK_DIR/scripts/rpc.py" -s "$TMP/t0.sock" "$@"; }
	quiet_spdk_rpc() { spdk_rpc "$@" >>"$TMP/spdk_rpc.out" 2>&1; }
	check "SPDK rpc.py bdev_malloc_create" quiet_spdk_rpc bdev_malloc_create -b S0 8 512
	check "SPDK rpc.py nvmf_create_subsystem" quiet_spdk_rpc nvmf_create_subsystem "$NQN" -a -s SN9
	check "SPDK rpc.py nvmf_subsystem_add_ns" quiet_spdk_rpc nvmf_subsystem_add_ns "$NQN" S0
	check "SPDK rpc.py nvmf_subsystem_add_listener" quiet_spdk_rpc nvmf_subsystem_add_listener \
		"$NQN" -t tcp -a 127.0.0.1 -s "$PORT" -f ipv4
	check_fails "SPDK rpc.py nvmf_create_subsystem -r refused" \
		quiet_spdk_rpc nvmf_create_subsystem nqn.2016-06.io.spdk:cnode10 -r
	check "... saying ana_reporting is not supported by gga" \
		grep -q "ana_reporting true: not supported by gga" "$TMP/spdk_rpc.out"
	check "SPDK rpc.py nvmf_get_subsystems" quiet_spdk_rpc nvmf_get_subsystems
	check "SPDK rpc.py keyring_file_add_key" quiet_spdk_rpc keyring_file_add_key key9 "$KEY_FILE"
	check "SPDK rpc.py keyring_get_keys" \
		test "$(spdk_rpc keyring_get_keys | jget - '[(k["name"], k["path"]) for k in d]')" = "[[\"key9\", \"$KEY_FILE\"]]"
	spdk_rpc save_config >"$TMP/spdk_config.json"
	rpc t0 save_config >"$TMP/gga_config.json"
	check "SPDK rpc.py save_config equals gga's save_config" \
		test "$(jget "$TMP/spdk_config.json" d)" = "$(jget "$TMP/gga_config.json" d)"
	check "SPDK rpc.py keyring_file_remove_key" quiet_spdk_rpc keyring_file_remove_key key9
	check_fails "SPDK rpc.py keyring_file_remove_key of an unknown key refused" \
		quiet_spdk_rpc keyring_file_remove_key key9
fi

check "gga_tgt still serving" eval "rpc t0 gga_get_version >/dev/null"
stop_tgt "$TGT_PID"
check "gga_tgt exits 0 on SIGTERM (in the ASan lane: no leak, no error)" test $? -eq 0
check_fails "no sanitizer report in the log" grep -q "runtime error\|Sanitizer" "$TMP/t0.log"
finish
