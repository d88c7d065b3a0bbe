#!/usr/bin/env bash
# NVMe/TCP secure channels (TLS 1.3 with a PSK, TP 8011) between gga's host
# and gga_tgt, and with OpenSSL's s_client as the host's TLS
# (test/integration/nvme_tls_peer.py, whose identities and TLS PSKs come from
# the Python derivation of the unit tests' known answers):
#  - a secure_channel listener and hosts with a psk; gga's host verifies
#    through TLS with a SHA-256 key (TLS_AES_128_GCM_SHA256) and a SHA-384
#    key (TLS_AES_256_GCM_SHA384), 4 KiB and 128 KiB I/O;
#  - s_client with identities of version 0 and 1 (with the PSK digest;
#    SHA-256 keys: OpenSSL 3.0's s_client offers no other with -psk);
#  - refused, each with its reason, while the target serves the others: a
#    wrong PSK, an identity that matches no host, one whose hash or digest
#    is not its key's, one that is not an NVMe identity, a Connect that names
#    another host or subsystem than its identity, plaintext on the TLS
#    listener (a downgrade), TLS on a plaintext listener, a host with a psk
#    connecting in plaintext, an unknown or malformed key, a listener that
#    would be both;
#  - the discovery log's TREQ and TSAS, nvmf_get_subsystems and
#    save_config (keys by name), and a restart from that configuration.
source "$(dirname "$0")/common.sh"

command -v openssl >/dev/null || skip "openssl (the command) is needed for s_client"
command -v nvme >/dev/null || skip "nvme-cli is needed (its gen-tls-key makes a key; scripts/pkgdep.sh installs it)"

NQN=nqn.2016-06.io.gga:tls
OPEN=nqn.2016-06.io.gga:open
HOST=nqn.2014-08.org.nvmexpress:uuid:3c1f6a2e-55d4-4b5c-8f0e-0a1b2c3d4e5f
HOST2=nqn.2014-08.org.nvmexpress:uuid:4d2a7b3f-66e5-4c6d-9a1f-1b2c3d4e5f60
HOST3=nqn.2014-08.org.nvmexpress:uuid:5e3b8c4a-77f6-4d7e-8b2a-2c3d4e5f6071
PEER=$GGA_ROOT/test/integration/nvme_tls_peer.py
source "$(dirname "$0")/keys_lib.sh"
KEY_NAMES="k1 k2 wrong k0 junk"

# key_file NAME ARGS...: nvme_tls_peer.py gen-key ARGS into $KEYS/NAME (0600).
key_file() {
	local name=$1
	shift
	python3 "$PEER" gen-key "$@" >"$KEYS/$name" && chmod 600 "$KEYS/$name"
}
key_file k1 --hash 1
# The SHA-384 key is nvme-cli's: its interchange format is the one gga reads.
(umask 077 && nvme gen-tls-key --hmac=2 >"$KEYS/k2")
key_file wrong --hash 1
key_file k0 --hash 1 --hh 0
printf 'DHHC-1:00:not a psk:\n' >"$KEYS/junk"
chmod 600 "$KEYS/junk"
SECRET_PART=$(cut -d: -f3 "$KEYS/k1" | cut -c5-30)

TLS_PORT=$(free_port)
PLAIN_PORT=$(free_port)
start_tgt t -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
T_PID=$TGT_PID
# listener NQN PORT [extra members]
listener() {
	printf '{"nqn":"%s","listen_address":{"trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s"}%s}' \
		"$1" "$2" "${3:+,$3}"
}
setup_target() {
	add_keys t &&
		rpc t bdev_malloc_create '{"name":"M0","num_blocks":16384,"block_size":512}' &&
		rpc t bdev_malloc_create '{"name":"M1","num_blocks":1024,"block_size":512}' &&
		rpc t nvmf_create_transport '{"trtype":"TCP"}' &&
		rpc t nvmf_create_subsystem "{\"nqn\":\"$NQN\"}" &&
		rpc t nvmf_subsystem_add_ns "{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"M0\"}}" &&
		rpc t nvmf_subsystem_add_listener "$(listener $NQN "$TLS_PORT" '"secure_channel":true')" &&
		rpc t nvmf_subsystem_add_listener "$(listener $NQN "$PLAIN_PORT")" &&
		rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"$HOST\",\"psk\":\"k1\"}" &&
		rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"$HOST2\",\"psk\":\"k2\"}" &&
		rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"$HOST3\"}" &&
		rpc t nvmf_create_subsystem "{\"nqn\":\"$OPEN\",\"allow_any_host\":true}" &&
		rpc t nvmf_subsystem_add_ns "{\"nqn\":\"$OPEN\",\"namespace\":{\"bdev_name\":\"M1\"}}" &&
		rpc t nvmf_subsystem_add_listener "$(listener $OPEN "$PLAIN_PORT")"
}
quiet() {
	"$@" >/dev/null
}
check "target set-up: keys, a TLS and a plaintext listener, hosts with and without a psk" \
	quiet setup_target

# RPC refusals that must leave nothing behind.
out=$(rpc t nvmf_subsystem_add_listener "$(listener $OPEN "$TLS_PORT")" 2>&1)
check "a plaintext listener on the TLS listener's port is refused, saying why" \
	grep -q "already a listener with a secure channel" <<<"$out"
out=$(rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001\",\"psk\":\"nokey\"}" 2>&1)
check "add_host with an unknown psk is refused, naming it" grep -q "no key named nokey" <<<"$out"
out=$(rpc t nvmf_subsystem_add_host "{\"nqn\":\"$NQN\",\"host\":\"nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001\",\"psk\":\"junk\"}" 2>&1)
check "add_host with a key that is not a TLS PSK is refused" \
	grep -q "junk is not a TLS PSK" <<<"$out"
rpc t nvmf_get_subsystems >"$TMP/subs.json"
check "refused calls left no host behind; psks are listed by name" \
	test "$(jget "$TMP/subs.json" "[h for s in d if s['nqn'] == '$NQN' for h in s['hosts']]")" = \
	"[{\"nqn\": \"$HOST\", \"psk\": \"k1\"}, {\"nqn\": \"$HOST2\", \"psk\": \"k2\"}, {\"nqn\": \"$HOST3\"}]"
check "nvmf_get_subsystems shows the secure channel of the TLS listener only" \
	test "$(jget "$TMP/subs.json" "[a.get('secure_channel', False) for s in d if s['nqn'] == '$NQN' for a in s['listen_addresses']]")" = "[true, false]"

# attach_json NAME HOSTNQN SUBNQN PORT [extra members]
attach_json() {
	printf '{"name":"%s","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s","subnqn":"%s","hostnqn":"%s"%s}' \
		"$1" "$4" "$3" "$2" "${5:+,$5}"
}

# bp_tls NAME HOSTNQN KEY IOSIZE: bdevperf verify for 2 s through a TLS attach; no mismatch.
bp_tls() {
	local out=$TMP/$1.out
	printf '{"subsystems":[{"subsystem":"keyring","config":[{"method":"keyring_file_add_key","params":{"name":"%s","path":"%s"}}]},{"subsystem":"bdev","config":[{"method":"bdev_nvme_attach_controller","params":%s}]}]}\n' \
		"$3" "$KEYS/$3" "$(attach_json N0 "$2" "$NQN" "$TLS_PORT" "\"psk\":\"$3\"")" >"$out.json"
	timeout -k 5 60 "$BIN/bdevperf" --json "$out.json" -w verify -b N0n1 -q 16 -o "$4" -t 2 \
		-m 0x2 >"$out" 2>&1 && verified "$out"
}
check "gga's host over TLS with a SHA-256 PSK: bdevperf verify, 4 KiB" bp_tls bp1 "$HOST" k1 4096
check "the target's log: secure channel up with TLS_AES_128_GCM_SHA256, identity v0 of the host" \
	grep -q "secure channel up (TLS_AES_128_GCM_SHA256), PSK identity NVMe0R01 $HOST $NQN" "$TMP/t.log"
n_q=$(grep -c "secure channel up (TLS_AES_128_GCM_SHA256), PSK identity NVMe0R01 $HOST" "$TMP/t.log")
check "every queue (admin and I/O: $n_q) came over TLS" test "$n_q" -ge 2
check "gga's host over TLS with a SHA-384 PSK: bdevperf verify, 128 KiB (many records a command)" \
	bp_tls bp2 "$HOST2" k2 131072
check "the target's log: TLS_AES_256_GCM_SHA384 for the SHA-384 key" \
	grep -q "secure channel up (TLS_AES_256_GCM_SHA384), PSK identity NVMe0R02 $HOST2 $NQN" "$TMP/t.log"

# OpenSSL's s_client as the TLS peer.
# peer OUTNAME ARGS...: nvme_tls_peer.py connect to the TLS listener; its line in $TMP/OUTNAME.
peer() {
	local name=$1
	shift
	timeout -k 5 60 python3 "$PEER" connect --port "$TLS_PORT" --subnqn "$NQN" "$@" \
		>"$TMP/$name.peer" 2>"$TMP/$name.peer-err"
}
# peer_says OUTNAME WORDS ARGS...: peer, and its line starts with WORDS.
peer_says() {
	local name=$1 want=$2
	shift 2
	peer "$name" "$@"
	grep -q "^$want" "$TMP/$name.peer" || {
		cat "$TMP/$name.peer" "$TMP/$name.peer-err"
		return 1
	}
}
check "openssl s_client, identity v0, SHA-256: handshake, ICReq, Connect, Property Get" \
	peer_says s1 "connected:" --key "$(cat "$KEYS/k1")" --hostnqn "$HOST"
check "openssl s_client, identity v1 (PSK digest): connected" \
	peer_says s2 "connected:" --key "$(cat "$KEYS/k1")" --hostnqn "$HOST" --version 1
check "the target logged the v1 identity" \
	grep -q "PSK identity NVMe1R01 $HOST $NQN " "$TMP/t.log"
check "an untransformed (hash 00) interchange PSK on the client side matches no host's key: closed" \
	peer_says s3 "closed:" --key "$(cat "$KEYS/k0")" --hostnqn "$HOST"

refusals_before=$(grep -c "TLS handshake refused" "$TMP/t.log")
check "a wrong PSK: the handshake fails and the target closes" \
	peer_says r1 "closed:" --key "$(cat "$KEYS/wrong")" --hostnqn "$HOST"
check "an identity for a host without a psk: refused, the target says why" \
	bash -c "python3 '$PEER' connect --port $TLS_PORT --subnqn $NQN --key '$(cat "$KEYS/k1")' --hostnqn $HOST3 | grep -q '^closed:' &&
		grep -q 'names host $HOST3 and subsystem $NQN: no such host has a psk' '$TMP/t.log'"
check "an identity for another subsystem: refused" \
	peer_says r3 "closed:" --key "$(cat "$KEYS/k1")" --hostnqn "$HOST" --identity-subnqn "$OPEN"
check "an identity whose hash (02) is not its key's: refused" \
	peer_says r4 "closed:" --key "$(cat "$KEYS/k1")" --hostnqn "$HOST" --identity "NVMe0R02 $HOST $NQN"
check "a version 1 identity with another key's digest: refused" \
	peer_says r5 "closed:" --key "$(cat "$KEYS/k1")" --hostnqn "$HOST" \
	--identity "NVMe1R01 $HOST $NQN AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
check "the target said the identity does not match the host's psk" \
	grep -q "the PSK identity of host $HOST on $NQN does not match its psk" "$TMP/t.log"
check "an identity that is not an NVMe one: refused" \
	peer_says r6 "closed:" --key "$(cat "$KEYS/k1")" --hostnqn "$HOST" --identity "client1"
check "the target said so" grep -q "'client1' is not an NVMe PSK identity" "$TMP/t.log"
check "the target logged each refused handshake" \
	test "$(grep -c "TLS handshake refused" "$TMP/t.log")" -ge $((refusals_before + 6))
check "a Connect naming another host than the TLS identity's: Connect Invalid Host" \
	peer_says r7 "refused: Connect status SCT 1 SC 0x84" --key "$(cat "$KEYS/k1")" \
	--hostnqn "$HOST2" --identity-hostnqn "$HOST"
check "the target logged the mismatch" \
	grep -q "as host $HOST2 to $NQN over a secure channel whose PSK identity is for host $HOST" "$TMP/t.log"

# The front: a second gga_tgt whose host library attaches (or is refused).
start_tgt f -m 0x2 || {
	not_ok "front gga_tgt starts"
	finish
}
F_PID=$TGT_PID
add_keys f
# refused NAME HOSTNQN SUBNQN PORT EXTRA REASON: the attach fails with REASON in its answer.
refused() {
	local out
	out=$(rpc f bdev_nvme_attach_controller "$(attach_json "$1" "$2" "$3" "$4" "$5")" 2>&1)
	if grep -q -- "$6" <<<"$out"; then
		return 0
	fi
	echo "attach answered: $out"
	return 1
}
check "gga's host with a wrong PSK: refused (TLS handshake failed)" \
	refused X1 "$HOST" "$NQN" "$TLS_PORT" '"psk":"wrong"' "TLS handshake failed"
check "plaintext on the TLS listener (a downgrade): refused" \
	refused X2 "$HOST3" "$NQN" "$TLS_PORT" "" "connection closed by the controller"
check "the target logged the plaintext ICReq on the TLS listener" \
	grep -q "a plaintext NVMe/TCP ICReq" "$TMP/t.log"
check "TLS on the plaintext listener: refused" \
	refused X3 "$HOST" "$NQN" "$PLAIN_PORT" '"psk":"k1"' "TLS handshake failed"
check "a host with a psk, in plaintext on the plaintext listener: Connect refused" \
	refused X4 "$HOST" "$NQN" "$PLAIN_PORT" "" "Invalid Host"
check "the target said it must use a secure channel" \
	grep -q "host $HOST (.*) has a psk on $NQN: refusing its Connect over plaintext" "$TMP/t.log"
out=$(rpc f bdev_nvme_attach_controller "$(attach_json X5 "$HOST" "$NQN" "$TLS_PORT" '"psk":"nokey"')" 2>&1)
check "attach with an unknown psk: refused before connecting" grep -q "psk: no key named nokey" <<<"$out"
out=$(rpc f bdev_nvme_attach_controller "$(attach_json X6 "$HOST" "$NQN" "$TLS_PORT" '"psk":"junk"')" 2>&1)
check "attach with a key that is not a PSK: refused" grep -q "junk is not a TLS PSK" <<<"$out"
out=$(rpc f bdev_nvme_attach_controller "$(attach_json X7 "$HOST" "$NQN" "$TLS_PORT" '"psk":"k1"' | sed 's/"trtype":"tcp"/"trtype":"rdma"/')" 2>&1)
check "attach with a psk over RDMA: refused" grep -q "psk: TLS is for NVMe/TCP only" <<<"$out"
check "the refusals left no controller on the front" \
	test "$(rpc f bdev_nvme_get_controllers | jget - 'len(d)')" = 0
check "the target still serves: the open subsystem in plaintext" \
	quiet rpc f bdev_nvme_attach_controller "$(attach_json O "$HOST3" "$OPEN" "$PLAIN_PORT")"
check "and the TLS host from the front" \
	quiet rpc f bdev_nvme_attach_controller "$(attach_json A "$HOST" "$NQN" "$TLS_PORT" '"psk":"k1"')"
check "a host without a psk on a subsystem it may use, in plaintext: attaches" \
	quiet rpc f bdev_nvme_attach_controller "$(attach_json B "$HOST3" "$NQN" "$PLAIN_PORT")"

# The discovery log: TREQ secure channel required and TSAS TLS 1.3 on the TLS listener.
python3 "$PEER" discovery --port "$PLAIN_PORT" --hostnqn "$HOST3" >"$TMP/disc.txt" 2>&1
check "discovery log: TREQ 1 (secure channel required), SECTYPE 2 (TLS 1.3) on the TLS port" \
	grep -qx "$NQN $TLS_PORT treq=1 sectype=2" "$TMP/disc.txt"
check "discovery log: TREQ 2 (not required), SECTYPE 0 on the plaintext port" \
	grep -qx "$NQN $PLAIN_PORT treq=2 sectype=0" "$TMP/disc.txt"

# save_config: keys by name, the listener's secure channel; no key material.
rpc t save_config >"$TMP/t-saved.json"
rpc f save_config >"$TMP/f-saved.json"
check "the target's save_config has secure_channel on the TLS listener and psk by name" \
	test "$(jget "$TMP/t-saved.json" "sorted(json.dumps(c['params'].get('secure_channel', False)) + '/' + c['params'].get('psk', '-') for s in d['subsystems'] if s['subsystem'] == 'nvmf' for c in s['config'] if c['method'] in ('nvmf_subsystem_add_listener', 'nvmf_subsystem_add_host'))")" = \
	'["false/-", "false/-", "false/-", "false/k1", "false/k2", "true/-"]'
check "the front's save_config has the attach's psk by name" \
	test "$(jget "$TMP/f-saved.json" "[c['params'].get('psk') for s in d['subsystems'] if s['subsystem'] == 'bdev' for c in s['config'] if c['method'] == 'bdev_nvme_attach_controller' and c['params']['name'] == 'A']")" = '["k1"]'
check "no key material in any log or saved file" \
	bash -c "! grep -l -- '$SECRET_PART' '$TMP'/*.log '$TMP'/*-saved.json '$TMP'/*.out"
stop_tgt "$T_PID" >/dev/null
check "the target exits 0 on SIGTERM (in the ASan lane: no leak, no error)" test $? -eq 0
start_tgt t2 -m 0x1 --json "$TMP/t-saved.json" || not_ok "gga_tgt restarts from its saved configuration"
check "restarted from save_config: gga's host verifies over TLS again" bp_tls bp3 "$HOST" k1 4096
check "and plaintext is still refused on the TLS port there" \
	bash -c "! timeout -k 5 30 python3 '$PEER' discovery --port $TLS_PORT --hostnqn $HOST3 >/dev/null 2>&1"
stop_tgt "$TGT_PID" >/dev/null
check "the restarted target exits 0 on SIGTERM" test $? -eq 0
stop_tgt "$F_PID" >/dev/null
check "the front exits 0 on SIGTERM (its TLS controller detached)" test $? -eq 0
check_fails "no sanitizer report in the logs" grep -q "runtime error\|Sanitizer" "$TMP"/*.log
finish
