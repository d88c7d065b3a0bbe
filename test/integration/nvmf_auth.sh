#!/usr/bin/env bash
# DH-HMAC-CHAP (NVMe in-band authentication) between gga's host and gga_tgt,
# and against an independent implementation (test/integration/nvme_auth.py,
# Python's hmac/hashlib, checked against SPDK's target by
# scripts/interop_spdk_auth.sh):
#  - gga's host with the right key, one way and both ways, attaches and
#    bdevperf verifies through authenticated admin and I/O queues;
#  - refused, each with its reason, leaving the target serving the others:
#    no key, a wrong key, a wrong controller key, a host that wants the
#    controller checked against a target that does not ask, a key unknown to
#    the keyring or not a DH-HMAC-CHAP secret;
#  - the independent host: every digest, the null group and ffdhe2048..8192,
#    key transforms 00..03, an I/O queue, a digest or group the target does
#    not allow, a command before authentication (Authentication Required),
#    a replayed Reply, messages out of order, bad lengths, a queue that never
#    authenticates (dropped after the deadline);
#  - nvmf_set_config's digests and groups, save_config (keys by name only)
#    and a restart from it.
source "$(dirname "$0")/common.sh"

NQN=nqn.2016-06.io.gga:auth
OPEN=nqn.2016-06.io.gga:open
HOST=nqn.2014-08.org.nvmexpress:uuid:6a1e7c3e-0d0b-4e5e-9d57-1a2b3c4d5e6f
HOST2=nqn.2014-08.org.nvmexpress:uuid:7b2f8d4f-1e1c-4f6f-8e68-2b3c4d5e6f70
AUTHPY=$GGA_ROOT/test/integration/nvme_auth.py
source "$(dirname "$0")/keys_lib.sh"
KEY_NAMES="hk ck wrong h2 junk"

# key_file NAME HASH LEN: a fresh DH-HMAC-CHAP secret (transform HASH, LEN bytes) in $KEYS/NAME.
key_file() {
	python3 -c 'import base64, os, struct, sys, zlib
k = os.urandom(int(sys.argv[2]))
print("DHHC-1:%02d:%s:" % (int(sys.argv[1]), base64.b64encode(k + struct.pack("<I", zlib.crc32(k))).decode()))' \
		"$2" "$3" >"$KEYS/$1"
	chmod 600 "$KEYS/$1"
}
key_file hk 1 32
key_file ck 3 64
key_file wrong 1 32
key_file h2 0 48
printf 'not a secret\n' >"$KEYS/junk"
chmod 600 "$KEYS/junk"
SECRET_PART=$(cut -d: -f3 "$KEYS/hk" | cut -c5-30)

PORT=$(free_port)
start_tgt t -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
T_PID=$TGT_PID
listener() {
	printf '{"nqn":"%s","listen_address":{"trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s"}}' "$1" "$PORT"
}
setup_target() {
	add_keys t &&
		rpc t bdev_malloc_create '{"name":"M0","num_blocks":16384,"block_size":512}' &&
		rpc t bdev_malloc_create '{"name":"M1","num_blocks":1024,"block_size":512}' &&
		rpc t nvmf_create_transport '{"trtype":"TCP"}' &&
		rpc t nvmf_create_subsystem "{\"nqn\":\"$NQN\"}" &&
		rpc t nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" &&
		rpc t nvmf_subsystem_add_listener "$(listener $NQN)" &&
		rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"$HOST\",\"dhchap_key\":\"hk\",\"dhchap_ctrlr_key\":\"ck\"}" &&
		rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"$HOST2\",\"dhchap_key\":\"h2\"}" &&
		rpc t nvmf_create_subsystem "{\"nqn\":\"$OPEN\",\"allow_any_host\":true}" &&
		rpc t nvmf_subsystem_add_ns "{\"nqn\":\"$OPEN\",\"namespace\":{\"bdev_name\":\"M1\"}}" &&
		rpc t nvmf_subsystem_add_listener "$(listener $OPEN)"
}
# quiet CMD...: CMD with its output dropped (a check's own line must stay).
quiet() {
	"$@" >/dev/null
}
check "target set-up: keys, a namespace, a subsystem with two keyed hosts, an open one" \
	quiet setup_target

# add_host errors: unknown key, not a secret, a controller key alone.
out=$(rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001\",\"dhchap_key\":\"nokey\"}" 2>&1)
check "add_host with an unknown key is refused, naming it" grep -q "no key named nokey" <<<"$out"
out=$(rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001\",\"dhchap_key\":\"junk\"}" 2>&1)
check "add_host with a key that is not a DH-HMAC-CHAP secret is refused" \
	grep -q "junk is not a DH-HMAC-CHAP secret" <<<"$out"
out=$(rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001\",\"dhchap_ctrlr_key\":\"ck\"}" 2>&1)
check "add_host with a controller key alone is refused" grep -q "needs dhchap_key" <<<"$out"
rpc t nvmf_get_subsystems >"$TMP/subs.json"
check "refused add_host calls left no host behind; keys are listed by name" \
	test "$(jget "$TMP/subs.json" "[h for s in d if s['nqn'] == '$NQN' for h in s['hosts']]")" = \
	"[{\"nqn\": \"$HOST\", \"dhchap_key\": \"hk\", \"dhchap_ctrlr_key\": \"ck\"}, {\"nqn\": \"$HOST2\", \"dhchap_key\": \"h2\"}]"

# attach_json NAME HOSTNQN SUBNQN [extra members]: bdev_nvme_attach_controller's params.
attach_json() {
	printf '{"name":"%s","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s","subnqn":"%s","hostnqn":"%s"%s}' \
		"$1" "$PORT" "$3" "$2" "${4:+,$4}"
}

# bp_auth OUT HOSTNQN EXTRA: bdevperf verify for 2 s through an authenticated attach.
bp_auth() {
	local out=$1
	printf '{"subsystems":[{"subsystem":"keyring","config":[{"method":"keyring_file_add_key","params":{"name":"hk","path":"%s"}},{"method":"keyring_file_add_key","params":{"name":"ck","path":"%s"}}]},{"subsystem":"bdev","config":[{"method":"bdev_nvme_attach_controller","params":%s}]}]}\n' \
		"$KEYS/hk" "$KEYS/ck" "$(attach_json N0 "$2" "$NQN" "$3")" >"$out.json"
	timeout -k 5 60 "$BIN/bdevperf" --json "$out.json" -w verify -b N0n1 -q 16 -o 4096 -t 2 \
		-m 0x2 >"$out" 2>&1
}

# bp_verified NAME HOSTNQN EXTRA: bp_auth, and the verify found no mismatch.
bp_verified() {
	bp_auth "$TMP/$1.out" "$2" "$3" && verified "$TMP/$1.out"
}
BOTH='"dhchap_key":"hk","dhchap_ctrlr_key":"ck"'
check "gga's host, DH-HMAC-CHAP both ways: bdevperf verifies through the authenticated queues" \
	bp_verified bp1 "$HOST" "$BOTH"
n_io=$(grep -c "authenticated queue [1-9]" "$TMP/t.log")
check "the target authenticated the admin queue (SHA-512, ffdhe8192, both ways)" \
	grep -q "authenticated queue 0 of $NQN (DH-HMAC-CHAP sha512, ffdhe8192, bidirectional)" "$TMP/t.log"
check "the target authenticated I/O queues too ($n_io)" test "$n_io" -ge 1
check "gga's host, one way (no controller key): bdevperf verifies" \
	bp_verified bp2 "$HOST" '"dhchap_key":"hk"'

# The front: a second gga_tgt whose host library attaches (or is refused).
start_tgt f -m 0x2 || {
	not_ok "front gga_tgt starts"
	finish
}
add_keys f
# refused NAME HOSTNQN EXTRA REASON: the attach fails with REASON in its answer.
refused() {
	local out
	out=$(rpc f bdev_nvme_attach_controller "$(attach_json "$1" "$2" "$NQN" "$3")" 2>&1)
	if grep -q -- "$4" <<<"$out"; then
		return 0
	fi
	echo "attach answered: $out"
	return 1
}
check "no key: refused (the controller requires DH-HMAC-CHAP)" \
	refused X1 "$HOST" "" "requires DH-HMAC-CHAP and no dhchap_key is set"
check "a wrong key: refused by the target (Failure1, authentication failed)" \
	refused X2 "$HOST" '"dhchap_key":"wrong"' "the controller sent Failure1 (authentication failed"
check "a wrong controller key: the host refuses the controller's response" \
	refused X3 "$HOST" '"dhchap_key":"hk","dhchap_ctrlr_key":"wrong"' "wrong controller response"
check "a right key under another host NQN: refused" \
	refused X4 "$HOST2" '"dhchap_key":"hk"' "authentication failed"
out=$(rpc f bdev_nvme_attach_controller "$(attach_json X5 "$HOST" "$OPEN" '"dhchap_key":"hk","dhchap_ctrlr_key":"ck"')" 2>&1)
check "a controller key against a subsystem that does not authenticate: refused" \
	grep -q "does not ask for DH-HMAC-CHAP" <<<"$out"
out=$(rpc f bdev_nvme_attach_controller "$(attach_json X6 "$HOST" "$NQN" '"dhchap_key":"nokey"')" 2>&1)
check "attach with an unknown key: refused before connecting" grep -q "dhchap_key: no key named nokey" <<<"$out"
out=$(rpc f bdev_nvme_attach_controller "$(attach_json X7 "$HOST" "$NQN" '"dhchap_key":"junk"')" 2>&1)
check "attach with a key that is not a secret: refused" grep -q "junk is not a DH-HMAC-CHAP secret" <<<"$out"
check "the refusals left no controller on the front" \
	test "$(rpc f bdev_nvme_get_controllers | jget - 'len(d)')" = 0
check "the target logged the wrong response" grep -q "failed: wrong response; disconnecting" "$TMP/t.log"
check "the target logged the host's Failure2" \
	grep -q "failed: the host sent Failure2; disconnecting" "$TMP/t.log"
# attached NAME HOSTNQN SUBNQN EXTRA: the front attaches.
attached() {
	rpc f bdev_nvme_attach_controller "$(attach_json "$1" "$2" "$3" "${4:-}")" >/dev/null
}
check "the open subsystem still serves a host without a key" attached O "$HOST2" "$OPEN"
check "the keyed host attaches from the front after all that" attached A "$HOST" "$NQN" "$BOTH"
check "host 2 (48-byte untransformed key) attaches" attached B "$HOST2" "$NQN" '"dhchap_key":"h2"'

# nvmf_set_config: the target chooses among the allowed digests and groups only.
check "nvmf_set_config restricts digests and groups" \
	rpc t nvmf_set_config '{"dhchap_digests":["sha256"],"dhchap_dhgroups":["null","ffdhe2048"]}'
out=$(rpc t nvmf_set_config '{"dhchap_digests":["md5"]}' 2>&1)
check "nvmf_set_config refuses an unknown digest" grep -q "dhchap_digests: unknown value md5" <<<"$out"
out=$(rpc t nvmf_set_config '{"dhchap_dhgroups":[]}' 2>&1)
check "nvmf_set_config refuses an empty list" grep -q "dhchap_dhgroups: expected a non-empty array" <<<"$out"
check "an attach after it works" attached C "$HOST2" "$NQN" '"dhchap_key":"h2"'
check "and used SHA-256 and ffdhe2048" \
	grep -q "authenticated queue 0 of $NQN (DH-HMAC-CHAP sha256, ffdhe2048)" "$TMP/t.log"

# bdev_nvme_set_options: what gga's host offers.
rpc t nvmf_set_config '{"dhchap_digests":["sha256","sha384","sha512"],"dhchap_dhgroups":["null","ffdhe2048","ffdhe3072","ffdhe4096","ffdhe6144","ffdhe8192"]}' >/dev/null
check "bdev_nvme_set_options sets the host's digests and groups" \
	rpc f bdev_nvme_set_options '{"dhchap_digests":["sha384"],"dhchap_dhgroups":["ffdhe3072"]}'
check "the host offers only those: SHA-384 and ffdhe3072 chosen" \
	bash -c "$BIN/gga_rpc -s $TMP/f.sock bdev_nvme_attach_controller '$(attach_json D "$HOST2" "$NQN" '"dhchap_key":"h2"')' >/dev/null &&
		grep -q 'authenticated queue 0 of $NQN (DH-HMAC-CHAP sha384, ffdhe3072)' $TMP/t.log"
rpc t nvmf_set_config '{"dhchap_digests":["sha512"]}' >/dev/null
check "nothing in common with the target: refused (hash function not usable)" \
	refused X8 "$HOST2" '"dhchap_key":"h2"' "hash function not usable"
out=$(rpc f bdev_nvme_set_options '{"dhchap_dhgroups":["ffdhe1024"]}' 2>&1)
check "bdev_nvme_set_options refuses an unknown group" \
	grep -q "dhchap_dhgroups: unknown value ffdhe1024" <<<"$out"
rpc f save_config >"$TMP/f-opts.json"
check "the front's save_config has bdev_nvme_set_options before its attaches" \
	test "$(jget "$TMP/f-opts.json" '[c["method"] for s in d["subsystems"] if s["subsystem"] == "bdev" for c in s["config"] if c["method"].startswith("bdev_nvme")][0]')" = bdev_nvme_set_options
rpc f bdev_nvme_set_options '{"dhchap_digests":["sha256","sha384","sha512"],"dhchap_dhgroups":["null","ffdhe2048","ffdhe3072","ffdhe4096","ffdhe6144","ffdhe8192"]}' >/dev/null

# The independent host (Python): interoperability and the hostile cases.
py() {
	timeout -k 5 60 python3 "$AUTHPY" "$@" --addr 127.0.0.1 --port "$PORT"
}
if [ -f "$AUTHPY" ]; then
	rpc t nvmf_set_config '{"dhchap_digests":["sha256","sha384","sha512"],"dhchap_dhgroups":["null","ffdhe2048","ffdhe3072","ffdhe4096","ffdhe6144","ffdhe8192"]}' >/dev/null
	for d in sha256 sha384 sha512; do
		for g in null ffdhe2048; do
			check "independent host: $d / $g, both ways, with an I/O queue" \
				py connect --subnqn "$NQN" --hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" \
				--ctrl-secret "$(cat "$KEYS/ck")" --digest $d --dhgroup $g --io-queue
		done
	done
	for g in ffdhe3072 ffdhe4096 ffdhe6144 ffdhe8192; do
		check "independent host: sha384 / $g" \
			py connect --subnqn "$NQN" --hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" \
			--digest sha384 --dhgroup $g
	done
	check "independent host: an untransformed 48-byte key (HH 00)" \
		py connect --subnqn "$NQN" --hostnqn "$HOST2" --secret "$(cat "$KEYS/h2")"
	check_fails "independent host: a wrong key is refused" \
		py connect --subnqn "$NQN" --hostnqn "$HOST" --secret "$(cat "$KEYS/wrong")"
	check_fails "independent host: a wrong controller key is caught by the host" \
		py connect --subnqn "$NQN" --hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" \
		--ctrl-secret "$(cat "$KEYS/wrong")"
	rpc t nvmf_set_config '{"dhchap_digests":["sha256"],"dhchap_dhgroups":["ffdhe2048"]}' >/dev/null
	out=$(py connect --subnqn "$NQN" --hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" --digest sha512 2>&1)
	check "a digest the target does not allow: Failure1 'hash function not usable'" \
		grep -qi "hash" <<<"$out"
	out=$(py connect --subnqn "$NQN" --hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" --dhgroup null 2>&1)
	check "a group the target does not allow: Failure1 'DH group not usable'" \
		grep -qi "group" <<<"$out"
	rpc t nvmf_set_config '{"dhchap_digests":["sha256","sha384","sha512"],"dhchap_dhgroups":["null","ffdhe2048","ffdhe3072","ffdhe4096","ffdhe6144","ffdhe8192"]}' >/dev/null
	# The hostile host: each scenario expects one refusal (a reason code, a status).
	scenarios=$(cd "$(dirname "$AUTHPY")" && python3 -c 'import nvme_auth; print(" ".join(nvme_auth.SCENARIOS))')
	check "the independent host has its hostile scenarios" test -n "$scenarios"
	for sc in $scenarios; do
		check "hostile host: $sc" \
			py scenario "$sc" --subnqn "$NQN" --hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" \
			--ctrl-secret "$(cat "$KEYS/ck")" --dhgroup null,ffdhe2048
	done
else
	not_ok "test/integration/nvme_auth.py is missing"
fi

# A queue that connects and never authenticates is dropped at the deadline (10 s).
silent_queue() {
	PYTHONPATH=$GGA_ROOT/test/integration timeout 30 python3 -c '
import sys, time, nvme_tcp_client as c
conn = c.Conn("127.0.0.1", int(sys.argv[1]))
cpl = conn.connect(sys.argv[2], sys.argv[3])
assert cpl.ok and cpl.cdw0 & (1 << 17), "Connect: no ATR"
t0 = time.time()
closed = conn.is_closed(wait=20)
print("closed after %.1f s" % (time.time() - t0))
sys.exit(0 if closed and 8 <= time.time() - t0 <= 15 else 1)' "$PORT" "$NQN" "$HOST"
}
check "a queue that never authenticates is dropped after 10 s" silent_queue
check "and the target says why" grep -q "did not authenticate queue 0 in 10 s" "$TMP/t.log"
check "the target still serves after every refusal" kill -0 "$T_PID"
check "bdevperf still verifies through the target" bp_verified bp3 "$HOST" "$BOTH"

# save_config: keys by name, never the material; a restart from it authenticates again.
rpc t nvmf_set_config '{"dhchap_digests":["sha384","sha512"]}' >/dev/null
rpc t save_config >"$TMP/t-saved.json"
rpc f save_config >"$TMP/f-saved.json"
check "the target's save_config names the host's keys" \
	test "$(jget "$TMP/t-saved.json" "[c['params'].get('dhchap_ctrlr_key') for s in d['subsystems'] for c in s['config'] if c['method'] == 'nvmf_subsystem_add_host' and c['params']['host'] == '$HOST']")" = '["ck"]'
check "the front's save_config names the attach's keys" \
	test "$(jget "$TMP/f-saved.json" "[c['params'].get('dhchap_key') for s in d['subsystems'] for c in s['config'] if c['method'] == 'bdev_nvme_attach_controller' and c['params']['name'] == 'A']")" = '["hk"]'
check_fails "no saved configuration and no log holds key material" \
	grep -q -F "$SECRET_PART" "$TMP/t-saved.json" "$TMP/f-saved.json" "$TMP/t.log" "$TMP/f.log"
check "save_config writes nvmf_set_config before the subsystems" \
	test "$(jget "$TMP/t-saved.json" '[c["method"] for s in d["subsystems"] if s["subsystem"] == "nvmf" for c in s["config"]][0]')" = nvmf_set_config
stop_tgt "$T_PID"
start_tgt t2 -m 0x1 --json "$TMP/t-saved.json" || not_ok "the target restarts from its saved configuration"
check "after the restart gga's host authenticates and verifies again" bp_verified bp4 "$HOST" "$BOTH"
check "with the saved digests (SHA-512 chosen, SHA-256 not allowed)" \
	grep -q "authenticated queue 0 of $NQN (DH-HMAC-CHAP sha512" "$TMP/t2.log"
out=$(timeout -k 5 60 python3 "$AUTHPY" connect --addr 127.0.0.1 --port "$PORT" --subnqn "$NQN" \
	--hostnqn "$HOST" --secret "$(cat "$KEYS/hk")" --digest sha256 2>&1)
check "a host offering only SHA-256 is refused after the restart" grep -qi "hash" <<<"$out"

finish
