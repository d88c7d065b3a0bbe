#!/usr/bin/env bash
# NVMe in-band authentication (DH-HMAC-CHAP): our pure-Python host
# (test/integration/nvme_auth.py) against SPDK's nvmf_tgt.
#
# A DEVELOPER SCRIPT, NOT PART OF `make test` (CI has no SPDK): run it by hand,
#   scripts/interop_spdk_auth.sh [-v]
# (-v prints every client's output).
#
# It needs an SPDK build at /work/spdk or $SPDK_DIR (build/bin/nvmf_tgt and
# scripts/rpc.py) and exits 77, printing the reason, when there is none. SPDK
# needs hugepages: nr_hugepages >= 1024 and hugetlbfs on /dev/hugepages, set
# up here as root (the script re-runs itself with `sudo -n` when not root;
# exit 77 when that is not possible). nvmf_tgt busy-polls one core (-m 0x1),
# so the run is kept short; it is killed and the temp files removed on any exit.
#
# Checks: every digest x {null, ffdhe2048, ffdhe3072}, unidirectional and
# bidirectional, with host and controller keys of every transform HH (00, 01,
# 02, 03, keys of 32/48/64 bytes, and keys from nvme-cli's gen-dhchap-key
# when it is installed); ffdhe4096, ffdhe6144 and ffdhe8192 once each; the
# I/O queue authenticated too (every bidirectional run of the matrix); commands before authentication refused with
# SCT 1 / SC 91h; a wrong host key (AUTH_Failure1, failed); a wrong controller
# key (our host rejects R2 and sends AUTH_Failure2); bidirectional asked of a
# host with no controller key at the target; a host without keys (ATR 0); the
# protocol-abuse scenarios of nvme_auth.py; then nvmf_tgt restarted allowing
# only sha256 and null/ffdhe2048: a disallowed digest (AUTH_Failure1, hash
# not usable), a disallowed DH group (DH group not usable), and the strongest
# allowed pair chosen when everything is offered.
# Prints "ok - ..." / "not ok - ..." per check; exits 1 if any failed.
set -u

verbose=0
[ "${1:-}" = -v ] && verbose=1

here=$(cd "$(dirname "$0")" && pwd)
client=$here/../test/integration/nvme_auth.py
spdk=${SPDK_DIR:-/work/spdk}
tgt_bin=$spdk/build/bin/nvmf_tgt
rpc_py=$spdk/scripts/rpc.py
if [ ! -x "$tgt_bin" ] || [ ! -f "$rpc_py" ]; then
	echo "skip: no SPDK build: $tgt_bin or $rpc_py missing (set SPDK_DIR)"
	exit 77
fi

# Hugepages, as root.
hugepages_ok() {
	[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1024 ] &&
		mount | grep -q ' /dev/hugepages type hugetlbfs'
}
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		exec sudo -n -E bash "$0" "$@"
	fi
	echo "skip: SPDK's nvmf_tgt needs root (hugepages); no passwordless sudo"
	exit 77
fi
if [ "$(cat /proc/sys/vm/nr_hugepages)" -lt 1024 ]; then
	echo 1024 >/proc/sys/vm/nr_hugepages
fi
if ! mount | grep -q ' /dev/hugepages type hugetlbfs'; then
	mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages
fi
if ! hugepages_ok; then
	echo "skip: cannot set up nr_hugepages >= 1024 and hugetlbfs on /dev/hugepages"
	exit 77
fi

tmp=$(mktemp -d /tmp/gga-auth-spdk.XXXXXX)
tgt_pid=
fails=0
oks=0
stop_tgt() {
	local i
	[ -n "$tgt_pid" ] || return 0
	kill -TERM "$tgt_pid" 2>/dev/null
	for i in $(seq 1 50); do
		kill -0 "$tgt_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$tgt_pid" 2>/dev/null
	wait "$tgt_pid" 2>/dev/null
	tgt_pid=
}
cleanup() {
	trap '' INT TERM
	stop_tgt
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() {
	echo "ok - $*"
	oks=$((oks + 1))
}
not_ok() {
	echo "not ok - $*"
	fails=$((fails + 1))
}
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

SUBNQN=nqn.2016-06.io.gga:auth-check
HOSTPFX=nqn.2014-08.io.gga:auth-host
PORT=$(free_port)

# start_tgt DIGESTS DHGROUPS: nvmf_tgt with a TCP listener on PORT, subsystem
# SUBNQN with a malloc namespace, and the hosts of the `hosts` table.
start_tgt() {
	local i
	rm -f "$tmp/spdk.sock"
	"$tgt_bin" -m 0x1 -r "$tmp/spdk.sock" --disable-cpumask-locks --wait-for-rpc \
		>"$tmp/tgt.log" 2>&1 &
	tgt_pid=$!
	for i in $(seq 1 100); do
		[ -S "$tmp/spdk.sock" ] && break
		kill -0 "$tgt_pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -S "$tmp/spdk.sock" ] || {
		echo "nvmf_tgt did not start:"
		tail -20 "$tmp/tgt.log"
		return 1
	}
	# One rpc.py for all of it (each start of rpc.py costs a second on a busy
	# machine); it stops at the first failing call.
	{
		echo "nvmf_set_config --dhchap-digests $1 --dhchap-dhgroups $2"
		echo "framework_start_init"
		echo "nvmf_create_transport -t TCP"
		echo "bdev_malloc_create -b Auth0 16 512"
		echo "nvmf_create_subsystem $SUBNQN -s AUTHCHECK0001"
		echo "nvmf_subsystem_add_ns $SUBNQN Auth0"
		echo "nvmf_subsystem_add_listener $SUBNQN -t tcp -a 127.0.0.1 -s $PORT -f ipv4"
		for i in "${!host_names[@]}"; do
			local args=""
			if [ -n "${host_keys[$i]}" ]; then
				echo "keyring_file_add_key hk$i $tmp/hk$i.key"
				args+=" --dhchap-key hk$i"
			fi
			if [ -n "${ctrl_keys[$i]}" ]; then
				echo "keyring_file_add_key ck$i $tmp/ck$i.key"
				args+=" --dhchap-ctrlr-key ck$i"
			fi
			echo "nvmf_subsystem_add_host $SUBNQN ${host_names[$i]}$args"
		done
	} >"$tmp/setup.rpc"
	python3 "$rpc_py" -s "$tmp/spdk.sock" <"$tmp/setup.rpc" >"$tmp/rpc.log" 2>&1 || {
		echo "rpc set-up failed:"
		tail -5 "$tmp/rpc.log"
		return 1
	}
}

# Hosts: name, host key, controller key (empty: none at the target).
host_names=()
host_keys=()
ctrl_keys=()
add_host() { # NAME HOSTKEY CTRLKEY
	local i=${#host_names[@]}
	host_names+=("$1")
	host_keys+=("$2")
	ctrl_keys+=("$3")
	(
		umask 077
		[ -z "$2" ] || printf '%s\n' "$2" >"$tmp/hk$i.key"
		[ -z "$3" ] || printf '%s\n' "$3" >"$tmp/ck$i.key"
	)
}
gen() { python3 "$client" gen-key "$@"; }
# rehash SECRET HH: the same key bytes with transform HH.
rehash() {
	python3 - "$(dirname "$client")" "$1" "$2" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import nvme_auth
_, key = nvme_auth.parse_dhchap_secret(sys.argv[2])
print(nvme_auth.format_dhchap_secret(int(sys.argv[3]), key))
PY
}
# Four hosts, one per host-key transform; the controller keys use the next
# transform, so both NQN transforms meet every HH. Key lengths vary with HH 00.
add_host "$HOSTPFX-hh00" "$(gen --hash 0 --length 48)" "$(gen --hash 1)"
add_host "$HOSTPFX-hh01" "$(gen --hash 1)" "$(gen --hash 2)"
add_host "$HOSTPFX-hh02" "$(gen --hash 2)" "$(gen --hash 3)"
add_host "$HOSTPFX-hh03" "$(gen --hash 3)" "$(gen --hash 0 --length 64)"
nkeyed=4
H_NOCTRL=${#host_names[@]}
add_host "$HOSTPFX-noctrl" "$(gen --hash 1)" ""
H_NOKEY=${#host_names[@]}
add_host "$HOSTPFX-nokey" "" ""
H_CLI=
if command -v nvme >/dev/null 2>&1; then
	k1=$(nvme gen-dhchap-key -m 1 -n "$HOSTPFX-nvmecli" 2>/dev/null)
	k2=$(nvme gen-dhchap-key -m 2 -n "$SUBNQN" 2>/dev/null)
	if [ -n "$k1" ] && [ -n "$k2" ]; then
		H_CLI=${#host_names[@]}
		add_host "$HOSTPFX-nvmecli" "$k1" "$k2"
	fi
fi

log_n=0
# expect RC PATTERN DESC -- CLIENT ARGS...: the client exits RC and prints PATTERN.
expect() {
	local want=$1 pat=$2 desc=$3 out rc
	shift 3
	[ "$1" = -- ] && shift
	log_n=$((log_n + 1))
	local t0=$EPOCHREALTIME
	out=$(timeout -k 5 90 python3 "$client" "$@" 2>&1)
	rc=$?
	[ $verbose = 0 ] || out+=$'\n'"($(python3 -c "print('%.2f' % ($EPOCHREALTIME - $t0))") s)"
	if [ "$rc" -eq "$want" ] && grep -qE -- "$pat" <<<"$out"; then
		ok "$desc"
		[ $verbose = 0 ] || indent "  # " <<<"$out"
	else
		not_ok "$desc (exit $rc, expected $want; wanted /$pat/)"
		indent "  | " <<<"$out" | head -30
	fi
}
indent() {
	local line
	while IFS= read -r line; do
		echo "$1$line"
	done
}
# host I: H=(the connect arguments of host I), without keys.
host() {
	H=(--addr 127.0.0.1 --port "$PORT" --subnqn "$SUBNQN" --hostnqn "${host_names[$1]}")
}

echo "# SPDK: $spdk; nvmf_tgt on 127.0.0.1:$PORT"
start_tgt sha256,sha384,sha512 null,ffdhe2048,ffdhe3072,ffdhe4096,ffdhe6144,ffdhe8192 || {
	not_ok "nvmf_tgt set up (see above)"
	exit 1
}
ok "nvmf_tgt up: TCP listener, subsystem, keyring keys (0600), hosts with DH-HMAC-CHAP keys"

# Our secret parser against nvme-cli's generator.
if command -v nvme >/dev/null 2>&1; then
	good=1
	for m in 0 1 2 3; do
		for l in 32 48 64; do
			[ $m -eq 0 ] || [ $l -eq $((m == 1 ? 32 : m == 2 ? 48 : 64)) ] || continue
			s=$(nvme gen-dhchap-key -m $m -l $l -n "$HOSTPFX-x" 2>/dev/null) || continue
			python3 "$client" check-key "$s" | grep -q "HH 0$m, key $l bytes" || good=0
		done
	done
	for hh in 0 1 2 3; do
		nvme check-dhchap-key -k "$(gen --hash $hh)" 2>&1 | grep -q 'Key is valid' || good=0
	done
	if [ $good = 1 ]; then
		ok "nvme-cli's gen-dhchap-key secrets parse; nvme-cli accepts ours"
	else
		not_ok "secret formats agree with nvme-cli"
	fi
fi

# The matrix.
n_uni=0
n_bi=0
for d in sha256 sha384 sha512; do
	for g in null ffdhe2048 ffdhe3072; do
		i=$((n_uni % nkeyed))
		n_uni=$((n_uni + 1))
		host "$i"
		expect 0 "qid 0 authenticated \($d, $g, unidirectional\)" \
			"$d $g unidirectional, host key HH0$i" -- \
			connect "${H[@]}" --secret "${host_keys[$i]}" --digest $d --dhgroup $g
		i=$(((n_bi + 2) % nkeyed))
		n_bi=$((n_bi + 1))
		host "$i"
		expect 0 "qid 0 authenticated \($d, $g, bidirectional\), qid 1 authenticated \($d, $g, bidirectional\), read nsid 1 ok" \
			"$d $g bidirectional + I/O queue, host key HH0$i, ctrl key HH0$(((i + 1) % 4))" -- \
			connect "${H[@]}" --secret "${host_keys[$i]}" --ctrl-secret "${ctrl_keys[$i]}" \
			--digest $d --dhgroup $g --io-queue
	done
done
host 1
expect 0 "authenticated \(sha384, ffdhe4096, bidirectional\)" "sha384 ffdhe4096 bidirectional" -- \
	connect "${H[@]}" --secret "${host_keys[1]}" --ctrl-secret "${ctrl_keys[1]}" \
	--digest sha384 --dhgroup ffdhe4096
host 2
expect 0 "authenticated \(sha256, ffdhe6144, unidirectional\)" "sha256 ffdhe6144 unidirectional" -- \
	connect "${H[@]}" --secret "${host_keys[2]}" --digest sha256 --dhgroup ffdhe6144
host 3
expect 0 "qid 0 authenticated \(sha512, ffdhe8192, bidirectional\)" "sha512 ffdhe8192 bidirectional" -- \
	connect "${H[@]}" --secret "${host_keys[3]}" --ctrl-secret "${ctrl_keys[3]}" \
	--digest sha512 --dhgroup ffdhe8192
if [ -n "$H_CLI" ]; then
	host "$H_CLI"
	expect 0 "qid 1 authenticated \(sha384, ffdhe2048, bidirectional\)" \
		"keys from nvme-cli's gen-dhchap-key (HH 01 host, HH 02 controller)" -- \
		connect "${H[@]}" --secret "${host_keys[$H_CLI]}" \
		--ctrl-secret "${ctrl_keys[$H_CLI]}" --digest sha384 --dhgroup ffdhe2048 --io-queue
fi

# Refusals.
host 0
expect 0 "qid 0 refused Property Get and Identify before authentication; qid 1 refused Property Get and Read before authentication" \
	"commands before authentication refused with SCT 1 / SC 91h (admin and I/O queue)" -- \
	connect "${H[@]}" --secret "${host_keys[0]}" --dhgroup ffdhe2048 --digest sha256 \
	--io-queue --probe-before-auth --expect-atr 1
host 1
expect 1 "AUTH_Failure1 rce=1 \(authentication failed\)" "wrong host key: AUTH_Failure1, failed" -- \
	connect "${H[@]}" --secret "$(gen --hash 1)" --digest sha256 --dhgroup ffdhe2048
host 1
expect 1 "AUTH_Failure1 rce=1 \(authentication failed\)" \
	"another host's key (right format, wrong host): AUTH_Failure1, failed" -- \
	connect "${H[@]}" --secret "${host_keys[2]}" --digest sha384 --dhgroup null
host 2
expect 1 "R2 does not verify; host sent AUTH_Failure2 rce=1 \(authentication failed\); then commands refused" \
	"wrong controller key: our host rejects R2, sends AUTH_Failure2" -- \
	connect "${H[@]}" --secret "${host_keys[2]}" --ctrl-secret "$(gen --hash 2)" \
	--digest sha512 --dhgroup ffdhe2048
host 0
expect 1 "R2 does not verify; host sent AUTH_Failure2" \
	"controller key of the wrong transform (same bytes, HH changed): AUTH_Failure2" -- \
	connect "${H[@]}" --secret "${host_keys[0]}" \
	--ctrl-secret "$(rehash "${ctrl_keys[0]}" 2)" \
	--digest sha256 --dhgroup null
host "$H_NOCTRL"
expect 1 "AUTH_Failure1 rce=1" "bidirectional asked, the target has no controller key: AUTH_Failure1" -- \
	connect "${H[@]}" --secret "${host_keys[$H_NOCTRL]}" --ctrl-secret "$(gen --hash 1)" \
	--digest sha256 --dhgroup ffdhe2048
host "$H_NOKEY"
expect 0 "not authenticated \(ATR=0\)" "a host without keys: Connect without ATR, works unauthenticated" -- \
	connect "${H[@]}" --expect-atr 0 --io-queue

# Protocol abuse.
host 1
out=$(timeout -k 5 120 python3 "$client" scenario all "${H[@]}" --secret "${host_keys[1]}" \
	--ctrl-secret "${ctrl_keys[1]}" --digest sha256,sha384 --dhgroup null,ffdhe2048 2>&1)
rc=$?
n_sc=$(grep -cE '^(not )?ok - ' <<<"$out")
[ "$rc" -eq 0 ] || [ "$(grep -c '^not ok - ' <<<"$out")" -gt 0 ] ||
	not_ok "nvme_auth.py scenario all: exit $rc without a failed scenario"
[ "$n_sc" -ge 20 ] || not_ok "nvme_auth.py scenario all: only $n_sc scenarios reported"
while IFS= read -r line; do
	case "$line" in
	"ok - "*) ok "scenario ${line#ok - }" ;;
	"not ok - "*) not_ok "scenario ${line#not ok - }" ;;
	*) echo "  | $line" ;;
	esac
done <<<"$out"
stop_tgt

# A target that allows sha256 and null/ffdhe2048 only.
start_tgt sha256 null,ffdhe2048 || {
	not_ok "nvmf_tgt restarted with --dhchap-digests sha256 --dhchap-dhgroups null,ffdhe2048"
	exit 1
}
host 3
expect 1 "AUTH_Failure1 rce=4 \(hash function not usable\)" \
	"digest the target does not allow (sha512): AUTH_Failure1, hash not usable" -- \
	connect "${H[@]}" --secret "${host_keys[3]}" --digest sha512 --dhgroup null
host 1
expect 1 "AUTH_Failure1 rce=4" "sha384 and sha512 offered, target allows sha256 only: hash not usable" -- \
	connect "${H[@]}" --secret "${host_keys[1]}" --digest sha384,sha512
host 0
expect 1 "AUTH_Failure1 rce=5 \(DH group not usable\)" \
	"DH group the target does not allow (ffdhe3072): AUTH_Failure1, DH group not usable" -- \
	connect "${H[@]}" --secret "${host_keys[0]}" --digest sha256 --dhgroup ffdhe3072
host 2
expect 0 "qid 0 authenticated \(sha256, ffdhe2048, bidirectional\)" \
	"everything offered: the target picks sha256 / ffdhe2048" -- \
	connect "${H[@]}" --secret "${host_keys[2]}" --ctrl-secret "${ctrl_keys[2]}"
stop_tgt

echo "# $oks ok, $fails not ok"
[ $fails -eq 0 ]
