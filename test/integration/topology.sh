#!/usr/bin/env bash
# The three-target topology (scripts/gga_topology.sh): four gga_tgt processes
# on 127.0.0.1, bdevperf attached to the front over NVMe/TCP.
# (a) verify end to end; (b) one half-block target SIGKILLed mid-run: the run
# passes, the member shows failed, the restarted target reconnects, the
# member is resynced and the array online again; (d) the front restarted from
# its saved configuration: the array assembles with the same uuid, the
# members' data is untouched (the superblock's generation bound only grows,
# as docs/FORMAT.md 7.3 requires; its event counter, member states and
# bitmap may change), a randread run passes; (e) a half-block target
# restarted on its file: checked, online again, its data unchanged; (c) two
# targets killed: I/O errors, never a verify mismatch; (f) a front exported
# to one host NQN refuses another; (g) memory members; (h) --dhchap: every
# connection authenticated both ways, a host without the key refused, a
# restarted member authenticates the front again; (i) --tls --dhchap: every
# connection over TLS and authenticated inside it, a plaintext host refused,
# a restarted member taking the front over TLS again.
source "$(dirname "$0")/common.sh"

BP=$BIN/bdevperf
D=$TMP/topo
HOST1=nqn.2014-08.io.gga:host-allowed
HOST2=nqn.2014-08.io.gga:host-other
source "$(dirname "$0")/topology_lib.sh"

# bp NAME [CONFIG] ARGS...: bdevperf on the front's namespace, bounded, output in $TMP/NAME.out.
bp() {
	local name=$1 cfg=$D/bdevperf.json
	shift
	if [ "${1:-}" != "${1#/}" ]; then
		cfg=$1
		shift
	fi
	timeout -k 5 60 "$BP" --json "$cfg" -m 0x2 -q 32 -o 4096 "$@" >"$TMP/$name.out" 2>&1
}

sha() {
	sha256sum "$1" | cut -d' ' -f1
}

# The file bdev keeps a 4 KiB header, then the member's blocks of 2048 data +
# 64 metadata bytes. The first 32 blocks are the reserved region: the gga
# superblock record in the first 128 data bytes (docs/FORMAT.md section 3),
# the write-intent bitmap further on; the data area follows. content_sha: the
# hash of the record's identity and geometry (bytes 0..71) and of the data
# area, which a restart must not change; the generation bound, the event
# counter, the member states and the bitmap may (and do).
# epoch: the record's generation_epoch.
content_sha() {
	python3 - "$1" <<'PY'
import hashlib, sys
b = open(sys.argv[1], "rb").read()
sb = 4096
assert b[sb:sb + 8] == b"GGASUPER"
h = hashlib.sha256(b[sb:sb + 72])
h.update(b[sb + 32 * (2048 + 64):])
print(h.hexdigest())
PY
}

epoch() {
	python3 -c 'import sys
b = open(sys.argv[1], "rb").read(4096 + 128)
assert b[4096:4104] == b"GGASUPER"
print(int.from_bytes(b[4096 + 72:4096 + 80], "little"))' "$1"
}

all_sums() {
	local n
	for n in 0 1 2; do
		"$1" "$D/hb$n.img"
	done
}

# --- (a) up, verify end to end ---
topo up --size 16 >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up (exit $rc)" test $rc -eq 0
if [ $rc -ne 0 ]; then
	cat "$TMP/up.out"
	finish
fi
check "up prints the front's address and NQN" \
	grep -q 'nqn.2016-06.io.gga:gga0 on 127.0.0.1:[0-9]' "$TMP/up.out"
status_ok() {
	topo status >"$TMP/status.out" &&
		[ "$(grep -c ': running' "$TMP/status.out")" = 4 ] &&
		[ "$(grep -c ' connected$' "$TMP/status.out")" = 3 ] &&
		grep -q 'gga0 online' "$TMP/status.out"
}
check "status: four daemons, three controllers connected, gga0 online" status_ok
bp verify -w verify -t 2
check "(a) verify through the front over NVMe/TCP: exit 0" test $? -eq 0
check "(a) verify: blocks compared, 0 mismatches" no_mismatch "$TMP/verify.out"
UUID=$(gga_info 'd[0]["array_uuid"]')

# --- (b) one half-block target SIGKILLed mid-run ---
bp kill1 -w verify -t 6 &
bpp=$!
sleep 2
topo kill-target 1 >/dev/null
wait $bpp
rc=$?
check "(b) hb1 killed mid-run: bdevperf exit 0 (rc $rc)" test $rc -eq 0
check "(b) 0 mismatches, no failed I/O" \
	bash -c "grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$TMP/kill1.out' &&
		! grep -q 'run failed' '$TMP/kill1.out'"
check "(b) bdev_gga_get_info: data_2 failed, array degraded" \
	test "$(gga_info '[m["state"] for m in d[0]["members"]] + [d[0]["state"]]')" \
	= '["online", "failed", "online", "degraded"]'
topo start-target 1 >/dev/null
rc=$?
track
check "(b) hb1 restarts on its file and port" test $rc -eq 0
check "(b) the front's controller hb1 is connected again" wait_connected hb1 10
wait_online() {
	local i
	for i in $(seq 1 100); do
		[ "$(gga_info 'd[0]["state"]')" = online ] && return 0
		sleep 0.2
	done
	return 1
}
check "(b) data_2 is resynced: the array is online again" wait_online
bp after1 -w verify -t 1
check "(b) verify after the restart: exit 0" test $? -eq 0
check "(b) verify after the restart: 0 mismatches" no_mismatch "$TMP/after1.out"

# --- (d) the front restarts from its saved configuration ---
topo stop-target front >"$TMP/stopfront.out"
check "(d) front stops cleanly" grep -q 'exit 0' "$TMP/stopfront.out"
before=$(all_sums content_sha)
e_before=$(all_sums epoch | sort -n | tail -1)
topo start-target front >/dev/null
rc=$?
track
check "(d) front restarts from front.json" test $rc -eq 0
check "(d) gga0 assembled with the same array uuid" test "$(gga_info 'd[0]["array_uuid"]')" = "$UUID"
after=$(all_sums content_sha)
check "(d) members' data unchanged across the front restart" test "$before" = "$after"
check "(d) the superblocks' generation bound only grew ($e_before -> $(all_sums epoch | sort -n | head -1))" \
	test "$(all_sums epoch | sort -n | head -1)" -ge "$e_before"
bp readback -w randread -t 1
check "(d) randread through the restarted front: exit 0" test $? -eq 0
check "(d) randread: no failed I/O" bash -c "grep -q '^Total' '$TMP/readback.out' && ! grep -q 'run failed' '$TMP/readback.out'"

# --- (e) a half-block target restarted on the same file ---
# The front checks a member whose controller reconnected (its superblock is
# read again, the member resynced): its data must come back unchanged.
s0=$(content_sha "$D/hb0.img")
topo stop-target 0 >"$TMP/stop0.out"
check "(e) hb0 stops cleanly" grep -q 'exit 0' "$TMP/stop0.out"
topo start-target 0 >/dev/null
track
check "(e) hb0 reconnects" wait_connected hb0 10
check "(e) data_1 checked and online again" wait_online
check "(e) hb0.img's data unchanged across the restart" test "$(content_sha "$D/hb0.img")" = "$s0"
bp after0 -w verify -t 1
check "(e) verify after the restart: exit 0" test $? -eq 0

# --- (c) two targets killed: errors, never wrong data ---
bp kill2 -w verify -t 3 &
bpp=$!
sleep 1
topo kill-target 0 >/dev/null
topo kill-target 2 >/dev/null
wait $bpp
rc=$?
check "(c) two targets killed: bdevperf fails on its own (rc $rc)" \
	test $rc -ne 0 -a $rc -ne 124 -a $rc -ne 137
check "(c) failed I/Os reported" grep -q 'run failed: [1-9][0-9]* failed I/Os' "$TMP/kill2.out"
check "(c) no verify mismatch" \
	bash -c "grep -q ', 0 verify mismatches' '$TMP/kill2.out' && ! grep -qi 'verify mismatch in' '$TMP/kill2.out'"
topo start-target 0 >/dev/null && topo start-target 2 >/dev/null
check "(c) hb0 and hb2 restart" test $? -eq 0
track
both_connected() {
	wait_connected hb0 10 && wait_connected hb2 10
}
check "(c) hb0 and hb2 reconnect" both_connected

# --- (f) a front exported to one host only ---
topo down >"$TMP/down1.out"
check "down: four daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down1.out")" = 4
topo up --size 16 --allow-host "$HOST1" >"$TMP/up2.out" 2>&1
rc=$?
track
check "(f) up again on the same files, one allowed host (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$TMP/up2.out"
check "(f) the array assembled from the superblocks (same uuid)" \
	test "$(gga_info 'd[0]["array_uuid"]')" = "$UUID"
for h in 1 2; do
	host=HOST$h
	jget "$D/bdevperf.json" "d['subsystems'][0]['config'][0]['params'].update(hostnqn='${!host}') or d" \
		>"$TMP/host$h.json"
done
bp host1 "$TMP/host1.json" -w verify -t 1
check "(f) the allowed host: verify exit 0" test $? -eq 0
start=$(date +%s)
bp host2 "$TMP/host2.json" -w verify -t 1
rc=$?
check "(f) another host is refused (rc $rc, $(($(date +%s) - start)) s)" \
	test $rc -ne 0 -a $rc -ne 124 -a $rc -ne 137
check "(f) the refusal says why" grep -qi 'host' "$TMP/host2.out"
check "(f) no I/O ran for the refused host" bash -c "! grep -q '^Total' '$TMP/host2.out'"

topo down >"$TMP/down2.out"
check "down: four daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down2.out")" = 4
check "down: no daemon left" bash -c "! ls '$D'/*.pid 2>/dev/null | grep -q ."

# --- (g) memory members (--members malloc, for benchmarks) ---
D=$TMP/topo-malloc
topo up --size 16 --members malloc >"$TMP/up3.out" 2>&1
rc=$?
track
check "(g) up --members malloc (exit $rc)" test $rc -eq 0
check "(g) no member files" bash -c "! ls '$D'/*.img 2>/dev/null | grep -q ."
bp malloc -w verify -t 1
check "(g) verify through malloc members: exit 0, no mismatch" \
	bash -c "[ $? -eq 0 ] && grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$TMP/malloc.out'"
check_fails "(g) --members disk is refused" topo up --members disk
topo down >"$TMP/down3.out"
check "(g) down: four daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down3.out")" = 4

# (h) and (i) check keys and TLS, code a build without RDMA shares: the
# no-RDMA lane (which runs this file for the TCP topology) leaves them to the
# normal and ASan lanes.
if [ "${GGA_LANE:-normal}" = nordma ]; then
	echo "note: no-RDMA lane: (h) --dhchap and (i) --tls run in the normal and ASan lanes"
	finish
fi

# keyed_restart_and_down CASE N WHAT: the end of a keyed topology's case: member N
# SIGKILLed and restarted from its saved configuration WHAT, the array whole again, no key
# material in any log or saved file, and a clean down.
keyed_restart_and_down() {
	topo kill-target "$2" >/dev/null
	topo start-target "$2" >/dev/null
	check "($1) a restarted member $3" wait_connected "hb$2" 15
	check "($1) and the array is whole again" wait_online
	check_fails "($1) no key material in any log or saved configuration" \
		grep -q -F -f <(cut -d: -f3 "$D"/keys/*.key | cut -c1-24) "$D"/*.log "$D"/*.json
	topo down >"$TMP/down-$1.out"
	check "($1) down: four daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down-$1.out")" = 4
}

# --- (h) --dhchap: every connection authenticated, both ways ---
D=$TMP/topo-dhchap
topo up --size 16 --dhchap >"$TMP/up4.out" 2>&1
rc=$?
track
check "(h) up --dhchap (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$TMP/up4.out"
check "(h) the secrets are private (keys/ 0700, files 0600)" \
	bash -c "[ \"\$(stat -c %a '$D/keys')\" = 700 ] && [ \"\$(stat -c %a '$D'/keys/*.key | sort -u)\" = 600 ]"
# members_authenticated: each member's log has the front's admin queue authenticated both ways.
members_authenticated() {
	local n
	for n in 0 1 2; do
		grep -q "authenticated queue 0 of nqn.2016-06.io.gga:hb$n (.*bidirectional)" \
			"$D/hb$n.log" || return 1
	done
}
check "(h) the front authenticated to each member both ways" members_authenticated
bp dhchap -w verify -t 2
check "(h) verify through the authenticated front: exit 0, no mismatch" \
	bash -c "[ $? -eq 0 ] && grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$TMP/dhchap.out'"
check "(h) bdevperf's queues authenticated at the front" \
	grep -q "authenticated queue [1-9] of nqn.2016-06.io.gga:gga0" "$D/front.log"
jget "$D/bdevperf.json" "[c['params'].pop('dhchap_key') and c['params'].pop('dhchap_ctrlr_key') for s in d['subsystems'] if s['subsystem'] == 'bdev' for c in s['config']] and d" \
	>"$TMP/nokey.json"
bp nokey "$TMP/nokey.json" -w verify -t 1
check "(h) a host without the key is refused, saying why" \
	bash -c "[ $? -ne 0 ] && grep -q 'requires DH-HMAC-CHAP' '$TMP/nokey.out' && ! grep -q '^Total' '$TMP/nokey.out'"
keyed_restart_and_down h 1 "authenticates the front again (keyring in its saved config)"

# --- (i) --tls --dhchap: every connection encrypted and authenticated ---
D=$TMP/topo-tls
topo up --size 16 --tls --dhchap >"$TMP/up5.out" 2>&1
rc=$?
track
check "(i) up --tls --dhchap (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$TMP/up5.out"
# members_tls: each member's log has the front's queues over TLS and authenticated.
members_tls() {
	local n
	for n in 0 1 2; do
		grep -q "secure channel up (TLS_AES_128_GCM_SHA256), PSK identity NVMe0R01 .* nqn.2016-06.io.gga:hb$n" \
			"$D/hb$n.log" &&
			grep -q "authenticated queue 0 of nqn.2016-06.io.gga:hb$n (.*bidirectional)" \
				"$D/hb$n.log" || return 1
	done
}
check "(i) the front reaches each member over TLS, and authenticates both ways inside it" members_tls
bp tls -w verify -t 2
check "(i) verify through the encrypted front: exit 0, no mismatch" \
	bash -c "[ $? -eq 0 ] && grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$TMP/tls.out'"
check "(i) bdevperf's queues came over TLS to the front" \
	grep -q "secure channel up (TLS_AES_128_GCM_SHA256), PSK identity NVMe0R01 .* nqn.2016-06.io.gga:gga0" "$D/front.log"
jget "$D/bdevperf.json" "[c['params'].pop('psk') for s in d['subsystems'] if s['subsystem'] == 'bdev' for c in s['config']] and d" \
	>"$TMP/nopsk.json"
bp nopsk "$TMP/nopsk.json" -w verify -t 1
check "(i) a host in plaintext is refused; the front logs the plaintext ICReq" \
	bash -c "[ $? -ne 0 ] && ! grep -q '^Total' '$TMP/nopsk.out' && grep -q 'plaintext NVMe/TCP ICReq' '$D/front.log'"
keyed_restart_and_down i 2 "takes the front over TLS again (its saved config)"
finish
