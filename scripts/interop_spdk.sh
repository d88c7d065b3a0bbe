#!/usr/bin/env bash
# gga_tgt with SPDK's hosts (outside `make test`: CI has no SPDK).
#   scripts/interop_spdk.sh [--spdk DIR] [BUILD]
# SPDK is built by hand as docs/TESTING.md says ("Building the SPDK peer",
# including test/nvme/reserve); it needs hugepages
# (nr_hugepages >= 1024, hugetlbfs on /dev/hugepages: set up here when run as
# root). Everything listens on 127.0.0.1.
#  1. SPDK's reservation tool (test/nvme/reserve: Get Features Host
#     Identifier, Register, Acquire, Release, Unregister, Report) against a
#     gga_tgt namespace.
#  2. SPDK's bdevperf as a multipath host, `multipath` then `failover`: two
#     paths to one gga_tgt namespace, verify while (multipath: A optimized,
#     B inaccessible) A turns inaccessible and B optimized, then A's listener
#     is removed and added back (failover: A's listener only; SPDK's failover
#     mode follows lost paths, not ANA states). Pass: bdevperf exits 0.
#  3. gga's bdevperf as the multipath host of SPDK's nvmf_tgt with ANA: the
#     same ANA failover and lost path, every block verified.
#  4. SPDK's bdevperf as the host of gga's two fronts (scripts/gga_topology.sh
#     --fronts 2), `multipath` then `failover`: verify while the active front
#     is SIGKILLed and the standby takes over. Pass: bdevperf exits 0 (no
#     failed I/O, no mismatch); the longest I/O is printed.
#  5. DH-HMAC-CHAP, both keys (the host's and the controller's), fresh secrets
#     (nvme_auth.py gen-key, files of mode 0600) in the keyring, both ways round:
#     a. SPDK's bdevperf as the host of gga_tgt (nvmf_subsystem_add_host with
#        dhchap_key and dhchap_ctrlr_key) for three digest/group pairs: SPDK's
#        default offer (gga_tgt picks sha512/ffdhe8192), SPDK's
#        bdev_nvme_set_options restricted to sha384/ffdhe3072, gga_tgt's
#        nvmf_set_config restricted to sha256/null. Each: verify exits 0 with no
#        failed I/O and no error, gga_tgt logs "authenticated queue" with that
#        pair for the admin and the I/O queue; a wrong host key (gga_tgt answers
#        Failure1, SPDK's attach fails) and a wrong controller key (SPDK's host
#        refuses gga_tgt's response and sends Failure2) fail the attach, and a
#        right run after them passes.
#     b. gga's bdevperf as the host of SPDK's nvmf_tgt (keyring keys,
#        nvmf_subsystem_add_host --dhchap-key --dhchap-ctrlr-key), SPDK's
#        default (sha512/ffdhe8192) and its nvmf_set_config restricted to
#        sha384/ffdhe2048: verify exits 0 with 0 mismatches, nvmf_subsystem_get_qpairs
#        shows the admin and I/O queues authenticated with that pair; a wrong
#        controller key is refused by gga's host ("wrong controller response"),
#        a wrong host key by SPDK (Failure1); a right run after them passes.
#  6. TLS (NVMe/TCP secure channels, TLS 1.3 with a PSK), fresh interchange
#     PSKs (nvme_tls_peer.py gen-key) in the keyring, both ways round:
#     a. SPDK's bdevperf as the host of gga_tgt (a secure_channel listener,
#        nvmf_subsystem_add_host psk) with a SHA-256 and a SHA-384 PSK: verify
#        exits 0 with no failed I/O, gga_tgt logs the admin and I/O queues'
#        secure channels with the suite of the key and SPDK's version 0
#        identity; a wrong PSK and a plaintext host are refused (gga_tgt logs
#        why), and a right run after them passes.
#     b. gga's bdevperf as the host of SPDK's nvmf_tgt (nvmf_subsystem_add_listener
#        -k, nvmf_subsystem_add_host --psk) with both keys: verify with 0
#        mismatches; a wrong PSK ("TLS handshake failed") and plaintext are
#        refused; a right run after them passes.
# Prints `ok - ...` / `not ok - ...` per check; exits non-zero if any failed.
set -u
spdk=${SPDK_DIR:-}
bin=build/bin
while [ $# -gt 0 ]; do
	case "$1" in
	--spdk) spdk=$2; shift ;;
	*) bin=$1/bin ;;
	esac
	shift
done
[ -n "$spdk" ] && [ -x "$spdk/build/examples/bdevperf" ] || {
	echo "interop_spdk: no SPDK build (--spdk DIR or SPDK_DIR with build/examples/bdevperf)" >&2
	exit 2
}
if [ "$(cat /proc/sys/vm/nr_hugepages)" -lt 1024 ] && [ "$(id -u)" = 0 ]; then
	echo 1024 >/proc/sys/vm/nr_hugepages
fi
if ! mount | grep -q ' /dev/hugepages type hugetlbfs' && [ "$(id -u)" = 0 ]; then
	mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages
fi
[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1024 ] && mount | grep -q ' /dev/hugepages type hugetlbfs' || {
	echo "interop_spdk: SPDK needs nr_hugepages >= 1024 and hugetlbfs on /dev/hugepages" >&2
	exit 2
}

tmp=$(mktemp -d /tmp/gga-interop.XXXXXX)
pids=()
fails=0
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
check() {
	local desc=$1
	shift
	if "$@"; then echo "ok - $desc"; else echo "not ok - $desc"; fails=$((fails + 1)); fi
}
# spdk_cpls OUT: the completions SPDK's bdevperf printed (the statuses of failed I/O), counted.
spdk_cpls() {
	grep -o 'print_completion_ext: .*' "$1" | sed 's/^[^]]*\] //; s/ cid:[0-9]*//; s/ sqhd:[0-9a-f]*//' |
		sort | uniq -c | sort -rn | head -5 | sed 's/^/  | completions: /'
}
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
rpc() { "$bin/gga_rpc" -s "$tmp/t.sock" "$@"; }
addr() {
	printf '{"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1", "trsvcid": "%s"}' "$1"
}
NQN=nqn.2016-06.io.gga:interop
PA=$(free_port)
PB=$(free_port)

"$bin/gga_tgt" -m 0x2 -r "$tmp/t.sock" >"$tmp/t.log" 2>&1 &
pids+=($!)
for i in $(seq 1 100); do grep -q ': ready' "$tmp/t.log" && break; sleep 0.1; done
rpc bdev_malloc_create --name M0 --num_blocks 32768 --block_size 512 >/dev/null
rpc nvmf_create_transport --trtype TCP >/dev/null
rpc nvmf_create_subsystem --nqn $NQN --allow_any_host true --ana_reporting true \
	--max_namespaces 2 >/dev/null
rpc nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"M0\"}}" >/dev/null
rpc nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA")}" >/dev/null
rpc nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PB"), \"ana_state\": \"inaccessible\"}" >/dev/null

# 1. SPDK's reservation tool.
if [ -x "$spdk/test/nvme/reserve/reserve" ]; then
	timeout -k 5 60 "$spdk/test/nvme/reserve/reserve" \
		-r "trtype:tcp adrfam:IPv4 traddr:127.0.0.1 trsvcid:$PA subnqn:$NQN" >"$tmp/reserve.out" 2>&1
	rc=$?
	sed 's/^/  | /' "$tmp/reserve.out" | grep -v "EAL\|TELEMETRY" | head -40
	check "SPDK's reserve against gga_tgt: exit 0" test $rc -eq 0
	check "it used the 128-bit Host Identifier and saw Reservations Supported" \
		bash -c "grep -q 'Reservations: *Supported' $tmp/reserve.out && grep -q '128-bit extended host identifier' $tmp/reserve.out"
else
	echo "skip: $spdk/test/nvme/reserve/reserve is not built (make -C test/nvme/reserve)"
fi

# 2. SPDK's bdevperf, two paths, while the paths change.
ana() { # PORT STATE
	rpc nvmf_subsystem_listener_set_ana_state --nqn $NQN --ana_state "$2" \
		--listen_address "$(addr "$1")" >/dev/null
}
for mode in multipath failover; do
	cat >"$tmp/bp.json" <<JSON
{"subsystems": [{"subsystem": "bdev", "config": [
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$PA", "subnqn": "$NQN", "multipath": "$mode"}},
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$PB", "subnqn": "$NQN", "multipath": "$mode"}}
]}]}
JSON
	ana "$PA" optimized
	# SPDK's failover mode keeps one path and moves only when it is lost (ANA
	# states do not move it): there the second path waits non-optimized.
	ana "$PB" "$([ $mode = multipath ] && echo inaccessible || echo non_optimized)"
	timeout -k 5 90 "$spdk/build/examples/bdevperf" -m 0x1 --json "$tmp/bp.json" -q 16 -o 4096 \
		-w verify -t 14 >"$tmp/bp.$mode.out" 2>&1 &
	bp=$!
	pids+=($bp)
	sleep 4
	if [ $mode = multipath ]; then
		ana "$PA" inaccessible
		sleep 0.5
		ana "$PB" optimized
	fi
	sleep 3
	rpc nvmf_subsystem_remove_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA")}" >/dev/null
	sleep 2
	rpc nvmf_subsystem_add_listener "{\"nqn\": \"$NQN\", \"listen_address\": $(addr "$PA"), \"ana_state\": \"non_optimized\"}" >/dev/null
	wait $bp
	rc=$?
	grep -E "Latency|N0n1|Total|error|fail" "$tmp/bp.$mode.out" | grep -v "EAL" | head -12 | sed 's/^/  | /'
	check "SPDK bdevperf ($mode) over two gga_tgt paths$([ $mode = multipath ] && echo " through an ANA failover and" || echo " through") a lost path: exit 0" \
		test $rc -eq 0
	[ $rc -eq 0 ] || spdk_cpls "$tmp/bp.$mode.out"
done
kill -TERM "${pids[0]}"
wait "${pids[0]}"
check "gga_tgt exits 0" test $? -eq 0
pids=()

# 3. gga's bdevperf as the multipath host of SPDK's nvmf_tgt (its ANA log, its path errors).
if [ -x "$spdk/build/bin/nvmf_tgt" ]; then
	srpc() { python3 "$spdk/scripts/rpc.py" -s "$tmp/spdk.sock" "$@" >/dev/null; }
	SNQN=nqn.2016-06.io.spdk:interop
	"$spdk/build/bin/nvmf_tgt" -m 0x1 -r "$tmp/spdk.sock" >"$tmp/spdk.log" 2>&1 &
	spid=$!
	pids+=($spid)
	for i in $(seq 1 100); do [ -S "$tmp/spdk.sock" ] && break; sleep 0.1; done
	srpc bdev_malloc_create -b M0 64 512
	srpc nvmf_create_transport -t TCP
	srpc nvmf_create_subsystem $SNQN -a -r
	srpc nvmf_subsystem_add_ns $SNQN M0
	srpc nvmf_subsystem_add_listener $SNQN -t tcp -a 127.0.0.1 -s "$PA" -f ipv4
	srpc nvmf_subsystem_add_listener $SNQN -t tcp -a 127.0.0.1 -s "$PB" -f ipv4
	srpc nvmf_subsystem_listener_set_ana_state $SNQN -n inaccessible -t tcp -a 127.0.0.1 -s "$PB" -f ipv4
	cat >"$tmp/gbp.json" <<JSON
{"subsystems": [{"subsystem": "bdev", "config": [
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$PA", "subnqn": "$SNQN"}},
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$PB", "subnqn": "$SNQN"}}
]}]}
JSON
	timeout -k 5 60 "$bin/bdevperf" -m 0x2 --json "$tmp/gbp.json" -q 16 -o 4096 -w verify -t 12 \
		-b N0n1 >"$tmp/gbp.out" 2>&1 &
	bp=$!
	pids+=($bp)
	sleep 4
	srpc nvmf_subsystem_listener_set_ana_state $SNQN -n inaccessible -t tcp -a 127.0.0.1 -s "$PA" -f ipv4
	sleep 0.5
	srpc nvmf_subsystem_listener_set_ana_state $SNQN -n optimized -t tcp -a 127.0.0.1 -s "$PB" -f ipv4
	sleep 3
	srpc nvmf_subsystem_remove_listener $SNQN -t tcp -a 127.0.0.1 -s "$PA" -f ipv4
	wait $bp
	rc=$?
	grep -E "verify:|error|lost" "$tmp/gbp.out" | head -6 | sed 's/^/  | /'
	check "gga's bdevperf over two paths of SPDK's nvmf_tgt through an ANA failover and a lost path: exit 0" \
		test $rc -eq 0
	check "and every block it read back was verified" \
		grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$tmp/gbp.out"
	# nvmf_tgt busy-polls core 0: stop it before the next sections.
	kill -TERM $spid
	wait $spid 2>/dev/null
	pids=()
fi
# 4. SPDK's bdevperf across a front failover.
for mode in multipath failover; do
	topo=$tmp/topo.$mode
	GGA_BUILD=$(dirname "$bin") bash scripts/gga_topology.sh up "$topo" --fronts 2 --size 16 \
		>"$tmp/topo.$mode.out" 2>&1 || {
		cat "$tmp/topo.$mode.out"
		check "topology with two fronts up" false
		continue
	}
	# shellcheck disable=SC1090
	source "$topo/topology.env"
	# SPDK retries an I/O whose path failed without limit (bdev_retry_count -1), as a
	# host that must ride out the takeover does.
	cat >"$tmp/bpf.json" <<JSON
{"subsystems": [{"subsystem": "bdev", "config": [
 {"method": "bdev_nvme_set_options", "params": {"bdev_retry_count": -1}},
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$base_port", "subnqn": "nqn.2016-06.io.gga:gga0", "multipath": "$mode"}},
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$((base_port + k + m + 1))", "subnqn": "nqn.2016-06.io.gga:gga0", "multipath": "$mode"}}
]}]}
JSON
	timeout -k 5 90 "$spdk/build/examples/bdevperf" -m 0x1 --disable-cpumask-locks --json "$tmp/bpf.json" -q 16 -o 4096 \
		-w verify -t 12 >"$tmp/bpf.$mode.out" 2>&1 &
	bp=$!
	pids+=($bp)
	sleep 4
	bash scripts/gga_topology.sh kill-target "$topo" front >/dev/null 2>&1
	wait $bp
	rc=$?
	grep -E "Latency|N0n1|Total|error|fail" "$tmp/bpf.$mode.out" | grep -v "EAL" | head -12 | sed 's/^/  | /'
	check "SPDK bdevperf ($mode) across a SIGKILL of the active front: exit 0 (rc $rc)" test $rc -eq 0
	[ $rc -eq 0 ] || { tail -n 30 "$tmp/bpf.$mode.out" "$tmp/topo.$mode.out" | cut -c1-200; spdk_cpls "$tmp/bpf.$mode.out"; }
	bash scripts/gga_topology.sh down "$topo" >/dev/null 2>&1
done

# 5. DH-HMAC-CHAP both ways round: SPDK's host against gga_tgt, gga's host against SPDK's nvmf_tgt.
AHOST=nqn.2014-08.org.nvmexpress:uuid:5c1d2a7e-3b4f-4c6d-8e9f-0a1b2c3d4e5f
ANQN=nqn.2016-06.io.gga:auth
keys=$tmp/keys
mkdir -m 700 "$keys"
for k in hk:1 ck:3 wrong:1; do
	(umask 077 && python3 test/integration/nvme_auth.py gen-key --hash "${k#*:}" >"$keys/${k%:*}")
done
# keyring_json KEY...: the keyring subsystem of a bdevperf config with those keys of $keys.
keyring_json() {
	local k sep=
	printf '{"subsystem": "keyring", "config": ['
	for k in "$@"; do
		printf '%s\n {"method": "keyring_file_add_key", "params": {"name": "%s", "path": "%s"}}' "$sep" $k "$keys/$k"
		sep=,
	done
	printf ']}'
}
# auth_json OUT PORT SUBNQN HOSTKEY CTRLKEY [A bdev_nvme_set_options CALL]: a bdevperf config that
# attaches N0 as AHOST with those keys.
auth_json() {
	cat >"$1" <<JSON
{"subsystems": [$(keyring_json hk ck wrong),
 {"subsystem": "bdev", "config": [${6:+$6,}
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$2", "subnqn": "$3", "hostnqn": "$AHOST", "dhchap_key": "$4", "dhchap_ctrlr_key": "$5"}}
]}]}
JSON
}
# since LOG N: LOG from line N on.
since() { tail -n +"$2" "$1"; }
# secs T0: seconds since EPOCHREALTIME T0.
secs() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
# start_gga LOG: a fresh gga_tgt on core 1 (RPC $tmp/t.sock, log LOG), ready; its pid in gpid.
start_gga() {
	rm -f "$tmp/t.sock"
	"$bin/gga_tgt" -m 0x2 -r "$tmp/t.sock" >"$1" 2>&1 &
	gpid=$!
	pids+=($gpid)
	for i in $(seq 1 100); do grep -q ': ready' "$1" && break; sleep 0.1; done
}
# keyed_target NQN BDEV LISTEN_EXTRA HOST_EXTRA KEY...: gga_tgt gets KEY... (files of $keys)
# in its keyring, a malloc namespace BDEV in subsystem NQN listening on PA (LISTEN_EXTRA:
# more members of that call), and AHOST added with HOST_EXTRA (its keys).
keyed_target() {
	local nqn=$1 bdev=$2 lextra=$3 hextra=$4 k
	shift 4
	for k in "$@"; do
		rpc keyring_file_add_key "{\"name\": \"$k\", \"path\": \"$keys/$k\"}" || return 1
	done
	rpc bdev_malloc_create --name "$bdev" --num_blocks 32768 --block_size 512 &&
		rpc nvmf_create_transport --trtype TCP &&
		rpc nvmf_create_subsystem "{\"nqn\": \"$nqn\"}" &&
		rpc nvmf_subsystem_add_ns "{\"nqn\": \"$nqn\", \"namespace\": {\"bdev_name\": \"$bdev\"}}" &&
		rpc nvmf_subsystem_add_listener "{\"nqn\": \"$nqn\", \"listen_address\": $(addr "$PA")$lextra}" &&
		rpc nvmf_subsystem_add_host "{\"nqn\": \"$nqn\", \"host\": \"$AHOST\"$hextra}"
}
# stop_gga: SIGTERM to the gga_tgt of start_gga, which must exit 0.
stop_gga() {
	kill -TERM "$gpid"
	wait "$gpid"
	check "gga_tgt exits 0" test $? -eq 0
	pids=()
}

# 5a. SPDK's bdevperf (host) against gga_tgt.
start_gga "$tmp/ta.log"
check "gga_tgt with keyring keys, a malloc namespace, the host added with dhchap_key and dhchap_ctrlr_key" \
	eval 'keyed_target $ANQN A0 "" ", \"dhchap_key\": \"hk\", \"dhchap_ctrlr_key\": \"ck\"" hk ck wrong >/dev/null'
# sbp NAME SECONDS HOSTKEY CTRLKEY [OPTIONS CALL]: SPDK's bdevperf verify through gga_tgt as AHOST.
sbp() {
	auth_json "$tmp/$1.json" "$PA" "$ANQN" "$3" "$4" "${5:-}"
	timeout -k 5 60 "$spdk/build/examples/bdevperf" -m 0x1 --disable-cpumask-locks --json "$tmp/$1.json" \
		-q 16 -o 4096 -w verify -t "$2" >"$tmp/$1.out" 2>&1
}
# no_failed OUT: SPDK's bdevperf reported its job and no failed I/O, and logged no error.
no_failed() {
	awk '$1 == "N0n1" && $2 == ":" { n++; if ($6 != "0.00") bad = 1 } END { exit !(n == 1 && !bad) }' "$1" &&
		! grep -q '\*ERROR\*' "$1"
}
# SPDK's host offers every digest and group and gga_tgt takes the strongest; then SPDK's
# host offers only sha384/ffdhe3072; then gga_tgt allows only sha256 and null.
for pair in "sha512 ffdhe8192 -" "sha384 ffdhe3072 host" "sha256 null target"; do
	read -r dg gr how <<<"$pair"
	opts=
	case $how in
	host) opts="{\"method\": \"bdev_nvme_set_options\", \"params\": {\"dhchap_digests\": [\"$dg\"], \"dhchap_dhgroups\": [\"$gr\"]}}" ;;
	target) rpc nvmf_set_config "{\"dhchap_digests\": [\"$dg\"], \"dhchap_dhgroups\": [\"$gr\"]}" >/dev/null ;;
	esac
	what="$dg/$gr$([ "$how" = - ] && echo ", SPDK's default offer" || echo ", restricted by the $how")"
	n0=$(($(wc -l <"$tmp/ta.log") + 1))
	t0=$EPOCHREALTIME
	sbp sa 3 hk ck "$opts"
	rc=$?
	grep -E "^[[:space:]]*N0n1|\*ERROR\*" "$tmp/sa.out" | head -6 | sed 's/^/  | /'
	check "SPDK bdevperf verify through gga_tgt, both keys ($what): exit 0, no failed I/O, no error ($(secs "$t0") s)" \
		eval "[ $rc -eq 0 ] && no_failed '$tmp/sa.out'"
	{ since "$tmp/ta.log" "$n0" | grep -m1 "authenticated queue 0 " &&
		since "$tmp/ta.log" "$n0" | grep -m1 "authenticated queue [1-9]"; } | cut -c1-220 | sed 's/^/  | /'
	check "gga_tgt authenticated the admin queue ($dg, $gr, bidirectional)" \
		eval "since '$tmp/ta.log' $n0 | grep -q 'authenticated queue 0 of $ANQN (DH-HMAC-CHAP $dg, $gr, bidirectional)'"
	check "and the I/O queue" \
		eval "since '$tmp/ta.log' $n0 | grep -q 'authenticated queue [1-9][0-9]* of $ANQN (DH-HMAC-CHAP $dg, $gr, bidirectional)'"
	n0=$(($(wc -l <"$tmp/ta.log") + 1))
	sbp sw 1 wrong ck "$opts"
	rc=$?
	grep -E "AUTH_failure|Failed to|failed" "$tmp/sw.out" | head -2 | cut -c1-220 | sed 's/^/  | /'
	check "a wrong host key: SPDK's attach fails (Failure1 from gga_tgt)" \
		eval "[ $rc -ne 0 ] && grep -q 'received AUTH_failure1: rc=1, rce=1' '$tmp/sw.out'"
	check "gga_tgt logged the wrong response" \
		eval "since '$tmp/ta.log' $n0 | grep -q 'of $ANQN failed: wrong response; disconnecting'"
	n0=$(($(wc -l <"$tmp/ta.log") + 1))
	sbp sc 1 hk wrong "$opts"
	rc=$?
	grep -E "challenge mismatch" "$tmp/sc.out" | head -1 | cut -c1-220 | sed 's/^/  | /'
	check "a wrong controller key: SPDK's host refuses gga_tgt's response, the attach fails" \
		eval "[ $rc -ne 0 ] && grep -q 'controller challenge mismatch' '$tmp/sc.out'"
	check "gga_tgt logged the host's Failure2" \
		eval "since '$tmp/ta.log' $n0 | grep -q 'of $ANQN failed: the host sent Failure2; disconnecting'"
	sbp sa2 1 hk ck "$opts"
	rc=$?
	check "gga_tgt keeps serving: a second right run passes" eval "[ $rc -eq 0 ] && no_failed '$tmp/sa2.out'"
done
stop_gga

# 5b. gga's bdevperf (host) against SPDK's nvmf_tgt.
if [ -x "$spdk/build/bin/nvmf_tgt" ]; then
	SANQN=nqn.2016-06.io.spdk:auth
	# spdk_auth_tgt [DIGESTS GROUPS]: nvmf_tgt (digests and groups restricted by its
	# nvmf_set_config, before init) with the keys and AHOST, both keys, on PB.
	spdk_auth_tgt() {
		rm -f "$tmp/spdk.sock"
		"$spdk/build/bin/nvmf_tgt" -m 0x1 -r "$tmp/spdk.sock" --wait-for-rpc >"$tmp/sauth.log" 2>&1 &
		spid=$!
		pids+=($spid)
		for i in $(seq 1 100); do [ -S "$tmp/spdk.sock" ] && break; sleep 0.1; done
		# One rpc.py for all of it (a start of rpc.py costs a second on a busy machine).
		{
			[ $# -eq 0 ] || echo "nvmf_set_config --dhchap-digests $1 --dhchap-dhgroups $2"
			cat <<RPC
framework_start_init
keyring_file_add_key hk $keys/hk
keyring_file_add_key ck $keys/ck
bdev_malloc_create -b M0 64 512
nvmf_create_transport -t TCP
nvmf_create_subsystem $SANQN
nvmf_subsystem_add_ns $SANQN M0
nvmf_subsystem_add_listener $SANQN -t tcp -a 127.0.0.1 -s $PB -f ipv4
nvmf_subsystem_add_host $SANQN $AHOST --dhchap-key hk --dhchap-ctrlr-key ck
RPC
		} >"$tmp/sauth.rpc"
		python3 "$spdk/scripts/rpc.py" -s "$tmp/spdk.sock" <"$tmp/sauth.rpc" >"$tmp/sauth.rpc.out" 2>&1 || {
			tail -5 "$tmp/sauth.rpc.out" "$tmp/sauth.log" | sed 's/^/  | /'
			return 1
		}
	}
	# gbp NAME SECONDS HOSTKEY CTRLKEY: gga's bdevperf verify through nvmf_tgt as AHOST.
	gbp() {
		auth_json "$tmp/$1.json" "$PB" "$SANQN" "$3" "$4"
		timeout -k 5 60 "$bin/bdevperf" -m 0x2 --json "$tmp/$1.json" -q 16 -o 4096 -w verify \
			-t "$2" -b N0n1 >"$tmp/$1.out" 2>&1
	}
	# qpairs_auth DIGEST GROUP: nvmf_tgt listed an admin and an I/O queue of AHOST, each
	# authenticated with DIGEST and GROUP (SPDK logs no success; its qpairs show it).
	qpairs_auth() {
		python3 -c '
import json, sys
try:
    qs = [q for q in json.load(open(sys.argv[1])) if q.get("hostnqn") == sys.argv[2]]
except ValueError:
    print("  | " + open(sys.argv[1]).read()[:300])
    sys.exit(1)
for q in qs:
    print("  | qid %d: auth %s" % (q["qid"], json.dumps(q.get("auth"))))
want = {"state": "completed", "digest": sys.argv[3], "dhgroup": sys.argv[4]}
sys.exit(0 if qs and all(q.get("auth") == want for q in qs) and
         {q["qid"] == 0 for q in qs} == {True, False} else 1)' "$tmp/qp.json" "$AHOST" "$1" "$2"
	}
	# gga's host offers every digest and group and SPDK takes the strongest; then SPDK's
	# nvmf_tgt allows only sha384 and ffdhe2048.
	for pair in "sha512 ffdhe8192 -" "sha384 ffdhe2048 target"; do
		read -r dg gr how <<<"$pair"
		what="$dg/$gr$([ "$how" = - ] && echo ", gga's default offer" || echo ", restricted by SPDK's nvmf_set_config")"
		check "SPDK's nvmf_tgt with keyring keys and nvmf_subsystem_add_host --dhchap-key --dhchap-ctrlr-key$([ "$how" = - ] || echo ", nvmf_set_config $dg/$gr")" \
			spdk_auth_tgt $([ "$how" = - ] || echo "$dg $gr")
		t0=$EPOCHREALTIME
		auth_json "$tmp/ga.json" "$PB" "$SANQN" hk ck
		timeout -k 5 60 "$bin/bdevperf" -m 0x2 --json "$tmp/ga.json" -q 16 -o 4096 -w verify \
			-t 4 -b N0n1 >"$tmp/ga.out" 2>&1 &
		bp=$!
		pids+=($bp)
		sleep 2
		python3 "$spdk/scripts/rpc.py" -s "$tmp/spdk.sock" nvmf_subsystem_get_qpairs $SANQN >"$tmp/qp.json" 2>&1
		wait $bp
		rc=$?
		grep -E "verify:|ERROR" "$tmp/ga.out" | head -4 | cut -c1-220 | sed 's/^/  | /'
		check "gga's bdevperf verify through SPDK's nvmf_tgt, both keys ($what): exit 0, 0 mismatches ($(secs "$t0") s)" \
			eval "[ $rc -eq 0 ] && grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$tmp/ga.out'"
		check "SPDK's nvmf_tgt showed the admin and the I/O queue authenticated ($dg, $gr, during the run)" \
			qpairs_auth "$dg" "$gr"
		n0=$(($(wc -l <"$tmp/sauth.log") + 1))
		gbp gc 1 hk wrong
		rc=$?
		grep -E "wrong controller|ERROR" "$tmp/gc.out" | head -1 | cut -c1-220 | sed 's/^/  | /'
		check "a wrong controller key: gga's host refuses SPDK's response (wrong controller response)" \
			eval "[ $rc -ne 0 ] && grep -q 'wrong controller response' '$tmp/gc.out'"
		check "SPDK's nvmf_tgt got the host's Failure2" \
			eval "since '$tmp/sauth.log' $n0 | grep -q 'ctrlr authentication failed'"
		n0=$(($(wc -l <"$tmp/sauth.log") + 1))
		gbp gw 1 wrong ck
		rc=$?
		grep -E "Failure1|ERROR" "$tmp/gw.out" | head -1 | cut -c1-220 | sed 's/^/  | /'
		check "a wrong host key: refused by SPDK's nvmf_tgt (Failure1, authentication failed)" \
			eval "[ $rc -ne 0 ] && grep -q 'the controller sent Failure1 (authentication failed' '$tmp/gw.out'"
		check "SPDK's nvmf_tgt logged the wrong response" \
			eval "since '$tmp/sauth.log' $n0 | grep -q 'challenge response mismatch'"
		gbp ga2 1 hk ck
		rc=$?
		check "SPDK's nvmf_tgt keeps serving: a second right run passes" \
			eval "[ $rc -eq 0 ] && grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$tmp/ga2.out'"
		kill -TERM $spid
		wait $spid 2>/dev/null
		pids=()
	done
fi

# 6. TLS (secure channels) both ways round: SPDK's host against gga_tgt, gga's host against SPDK's nvmf_tgt.
TNQN=nqn.2016-06.io.gga:tls
for k in tk:1 tk384:2 twrong:1; do
	# No newline: SPDK takes the file's bytes as they are and wants the final colon last.
	(umask 077 && python3 test/integration/nvme_tls_peer.py gen-key --hash "${k#*:}" | tr -d "\n" >"$keys/${k%:*}")
done
# tls_json OUT PORT SUBNQN [PSK]: a bdevperf config that attaches N0 as AHOST (with PSK, a key name).
tls_json() {
	cat >"$1" <<JSON
{"subsystems": [$(keyring_json tk tk384 twrong),
 {"subsystem": "bdev", "config": [
 {"method": "bdev_nvme_attach_controller", "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": "$2", "subnqn": "$3", "hostnqn": "$AHOST"${4:+, \"psk\": \"$4\"}}}
]}]}
JSON
}

# 6a. SPDK's bdevperf (host) against gga_tgt's secure channel.
start_gga "$tmp/tt.log"
check "gga_tgt with a secure_channel listener and the host added with a psk" \
	eval 'keyed_target $TNQN T0 ", \"secure_channel\": true" ", \"psk\": \"tk\"" tk tk384 twrong >/dev/null'
# stls NAME SECONDS [PSK]: SPDK's bdevperf verify through gga_tgt's TLS listener as AHOST.
stls() {
	tls_json "$tmp/$1.json" "$PA" "$TNQN" "${3:-}"
	timeout -k 5 60 "$spdk/build/examples/bdevperf" -m 0x1 --disable-cpumask-locks --json "$tmp/$1.json" \
		-q 16 -o 4096 -w verify -t "$2" >"$tmp/$1.out" 2>&1
}
n0=$(($(wc -l <"$tmp/tt.log") + 1))
t0=$EPOCHREALTIME
stls ta 3 tk
rc=$?
grep -E "^[[:space:]]*N0n1|\*ERROR\*" "$tmp/ta.out" | head -6 | sed 's/^/  | /'
check "SPDK bdevperf verify through gga_tgt over TLS (SHA-256 PSK): exit 0, no failed I/O, no error ($(secs "$t0") s)" \
	eval "[ $rc -eq 0 ] && no_failed '$tmp/ta.out'"
since "$tmp/tt.log" "$n0" | grep -m2 "secure channel up" | cut -c1-220 | sed 's/^/  | /'
check "gga_tgt: SPDK's admin and I/O queues came over TLS_AES_128_GCM_SHA256 with its v0 identity" \
	eval "[ \$(since '$tmp/tt.log' $n0 | grep -c 'secure channel up (TLS_AES_128_GCM_SHA256), PSK identity NVMe0R01 $AHOST $TNQN') -ge 2 ]"
rpc nvmf_subsystem_remove_host "{\"nqn\": \"$TNQN\", \"host\": \"$AHOST\"}" >/dev/null
rpc nvmf_subsystem_add_host "{\"nqn\": \"$TNQN\", \"host\": \"$AHOST\", \"psk\": \"tk384\"}" >/dev/null
n0=$(($(wc -l <"$tmp/tt.log") + 1))
stls ta384 2 tk384
rc=$?
check "SPDK bdevperf over TLS with a SHA-384 PSK: exit 0, no failed I/O" \
	eval "[ $rc -eq 0 ] && no_failed '$tmp/ta384.out'"
check "gga_tgt: TLS_AES_256_GCM_SHA384, identity NVMe0R02" \
	eval "since '$tmp/tt.log' $n0 | grep -q 'secure channel up (TLS_AES_256_GCM_SHA384), PSK identity NVMe0R02 $AHOST $TNQN'"
n0=$(($(wc -l <"$tmp/tt.log") + 1))
stls tw 1 twrong
rc=$?
grep -E "ERROR" "$tmp/tw.out" | head -2 | cut -c1-220 | sed 's/^/  | /'
check "a wrong PSK: SPDK's attach fails" eval "[ $rc -ne 0 ]"
check "gga_tgt logged the refused handshake" \
	eval "since '$tmp/tt.log' $n0 | grep -q 'TLS handshake refused'"
n0=$(($(wc -l <"$tmp/tt.log") + 1))
stls tp 1
rc=$?
check "SPDK's host in plaintext on the TLS listener: refused" eval "[ $rc -ne 0 ]"
check "gga_tgt logged the plaintext ICReq" \
	eval "since '$tmp/tt.log' $n0 | grep -q 'plaintext NVMe/TCP ICReq'"
stls ta2 1 tk384
rc=$?
check "gga_tgt keeps serving: a second right run passes" eval "[ $rc -eq 0 ] && no_failed '$tmp/ta2.out'"
stop_gga

# 6b. gga's bdevperf (host) against SPDK's nvmf_tgt's secure channel.
if [ -x "$spdk/build/bin/nvmf_tgt" ]; then
	STNQN=nqn.2016-06.io.spdk:tls
	# spdk_tls_tgt PSK: nvmf_tgt with a TLS listener (-k) on PB and AHOST added with PSK.
	spdk_tls_tgt() {
		rm -f "$tmp/spdk.sock"
		"$spdk/build/bin/nvmf_tgt" -m 0x1 -r "$tmp/spdk.sock" >"$tmp/stls.log" 2>&1 &
		spid=$!
		pids+=($spid)
		for i in $(seq 1 100); do [ -S "$tmp/spdk.sock" ] && break; sleep 0.1; done
		cat >"$tmp/stls.rpc" <<RPC
keyring_file_add_key tk $keys/tk
keyring_file_add_key tk384 $keys/tk384
bdev_malloc_create -b M0 64 512
nvmf_create_transport -t TCP
nvmf_create_subsystem $STNQN
nvmf_subsystem_add_ns $STNQN M0
nvmf_subsystem_add_listener $STNQN -t tcp -a 127.0.0.1 -s $PB -f ipv4 -k
nvmf_subsystem_add_host $STNQN $AHOST --psk $1
RPC
		python3 "$spdk/scripts/rpc.py" -s "$tmp/spdk.sock" <"$tmp/stls.rpc" >"$tmp/stls.rpc.out" 2>&1 || {
			tail -n 5 "$tmp/stls.rpc.out" "$tmp/stls.log" | sed 's/^/  | /'
			return 1
		}
	}
	# gtls NAME SECONDS [PSK]: gga's bdevperf verify through nvmf_tgt's TLS listener as AHOST.
	gtls() {
		tls_json "$tmp/$1.json" "$PB" "$STNQN" "${3:-}"
		timeout -k 5 60 "$bin/bdevperf" -m 0x2 --json "$tmp/$1.json" -q 16 -o 4096 -w verify \
			-t "$2" -b N0n1 >"$tmp/$1.out" 2>&1
	}
	for key in tk tk384; do
		check "SPDK's nvmf_tgt with a secure-channel listener (-k) and the host added with --psk $key" \
			spdk_tls_tgt $key
		t0=$EPOCHREALTIME
		gtls ga 3 $key
		rc=$?
		grep -E "verify:|ERROR" "$tmp/ga.out" | head -4 | cut -c1-220 | sed 's/^/  | /'
		check "gga's bdevperf verify through SPDK's nvmf_tgt over TLS ($key): exit 0, 0 mismatches ($(secs "$t0") s)" \
			eval "[ $rc -eq 0 ] && grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$tmp/ga.out'"
		gtls gw 1 twrong
		rc=$?
		grep -E "TLS|ERROR" "$tmp/gw.out" | head -1 | cut -c1-220 | sed 's/^/  | /'
		check "a wrong PSK: gga's host is refused (TLS handshake failed)" \
			eval "[ $rc -ne 0 ] && grep -q 'TLS handshake failed' '$tmp/gw.out'"
		gtls gp 1
		rc=$?
		check "gga's host in plaintext on SPDK's TLS listener: refused" eval "[ $rc -ne 0 ]"
		gtls ga2 1 $key
		rc=$?
		check "SPDK's nvmf_tgt keeps serving: a second right run passes" \
			eval "[ $rc -eq 0 ] && grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' '$tmp/ga2.out'"
		kill -TERM $spid
		wait $spid 2>/dev/null
		pids=()
	done
fi

echo "interop_spdk: $fails failed"
[ $fails -eq 0 ]
