#!/usr/bin/env bash
# Admission under a connection flood (issue 33): how long a new host takes to
# get in while 1,000 silent sockets hold a plaintext listener of gga_tgt and
# 100 stalled TLS handshakes its secure_channel listener, and 100
# half-finished DH-HMAC-CHAP exchanges (test/integration/nvme_auth.py attack
# hold: Connect as a keyed host, a Negotiate, silence) its plaintext one,
# every one the target closes reopened at once (an attacker keeping the
# flood up). The host
# is test/integration/nvme_tcp_client.py (ICReq, admin and I/O Connect, a
# read), retried every 100 ms; the default transport options. Prints one line.
#
#   scripts/bench_admission.sh [-t SECONDS] [--spdk DIR]
#   (give up after SECONDS, default 30). GGA_BUILD=DIR picks the binaries
#   (default build/); GGA_FLOOD_COUNT and GGA_FLOOD_TLS_COUNT change the flood
#   and GGA_FLOOD_AUTH_COUNT (0, 0 and 0: the time without one). --spdk DIR (or SPDK_DIR) floods SPDK's
#   nvmf_tgt (DIR/build/bin/nvmf_tgt, its default TCP transport, one reactor,
#   a malloc namespace, a plaintext and a secure-channel listener) instead, for
#   the side-by-side figure; it needs hugepages as scripts/interop_spdk.sh says.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
secs=30
spdk=${SPDK_DIR:-}
use_spdk=0
while [ $# -gt 0 ]; do
	case "$1" in
	-t) secs=$2 && shift ;;
	--spdk) spdk=$2 && use_spdk=1 && shift ;;
	*) echo "usage: bench_admission.sh [-t SECONDS] [--spdk DIR]" >&2 && exit 2 ;;
	esac
	shift
done
ulimit -n 8192 2>/dev/null || true
tmp=$(mktemp -d /tmp/gga-bench-adm.XXXXXX)
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"
bench_lib_init

port=$(free_port 2)
tls_port=$((port + 1))
nqn=nqn.2016-06.io.gga:bench-admission
host=nqn.2014-08.org.nvmexpress:uuid:0b9f8a3c-1d2e-4f50-8a6b-7c8d9e0f1a2b
keyed=nqn.2014-08.org.nvmexpress:uuid:3f4a5b6c-7d8e-4f90-a1b2-c3d4e5f60718
authpy=$root/test/integration/nvme_auth.py
python3 "$authpy" gen-key --hash 1 >"$tmp/hk" && chmod 600 "$tmp/hk"
if [ $use_spdk = 1 ]; then
	[ -x "$spdk/build/bin/nvmf_tgt" ] || { echo "bench_admission: no $spdk/build/bin/nvmf_tgt" >&2 && exit 2; }
	[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1024 ] || echo 1024 >/proc/sys/vm/nr_hugepages
	mount | grep -q ' /dev/hugepages type hugetlbfs' ||
		{ mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages; }
	"$spdk/build/bin/nvmf_tgt" -m 0x1 -r "$tmp/t.sock" --disable-cpumask-locks >"$tmp/t.log" 2>&1 &
	pids+=($!)
	t() { "$spdk/scripts/rpc.py" -s "$tmp/t.sock" "$@" >"$tmp/rpc.out" 2>&1 || { cat "$tmp/rpc.out" >&2; echo "bench_admission: $1 failed" >&2; exit 1; }; }
	for _ in $(seq 1 100); do
		[ -S "$tmp/t.sock" ] && "$spdk/scripts/rpc.py" -s "$tmp/t.sock" spdk_get_version >/dev/null 2>&1 && break
		sleep 0.2
	done
	t bdev_malloc_create -b M0 8 512
	t nvmf_create_transport -t TCP
	t nvmf_create_subsystem "$nqn" -a
	t nvmf_subsystem_add_ns "$nqn" M0
	t nvmf_subsystem_add_listener "$nqn" -t tcp -f ipv4 -a 127.0.0.1 -s "$port"
	# SPDK takes a secure channel only on a subsystem that names its hosts.
	t nvmf_create_subsystem "$nqn-tls"
	t nvmf_subsystem_add_listener "$nqn-tls" -t tcp -f ipv4 -a 127.0.0.1 -s "$tls_port" -k
	t keyring_file_add_key hk "$tmp/hk"
	t nvmf_create_subsystem "$nqn-auth"
	t bdev_malloc_create -b M1 8 512 # SPDK lets one subsystem claim a bdev
	t nvmf_subsystem_add_ns "$nqn-auth" M1
	t nvmf_subsystem_add_listener "$nqn-auth" -t tcp -f ipv4 -a 127.0.0.1 -s "$port"
	t nvmf_subsystem_add_host "$nqn-auth" "$keyed" --dhchap-key hk
else
	"$bin/gga_tgt" -m 0x1 -r "$tmp/t.sock" >"$tmp/t.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 100); do grep -q ': ready' "$tmp/t.log" && break; sleep 0.1; done
	t() { "$bin/gga_rpc" -s "$tmp/t.sock" "$@" >/dev/null || { echo "bench_admission: $1 failed" >&2; exit 1; }; }
	listen() {
		printf '{"nqn":"%s","listen_address":{"trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s"}%s}' \
			"$nqn" "$1" "${2:+,$2}"
	}
	t bdev_malloc_create '{"name":"M0","num_blocks":16384,"block_size":512}'
	t nvmf_create_transport '{"trtype":"TCP"}'
	t nvmf_create_subsystem "{\"nqn\":\"$nqn\",\"allow_any_host\":true}"
	t nvmf_subsystem_add_ns "{\"nqn\":\"$nqn\",\"namespace\":{\"bdev_name\":\"M0\"}}"
	t nvmf_subsystem_add_listener "$(listen "$port")"
	t nvmf_subsystem_add_listener "$(listen "$tls_port" '"secure_channel":true')"
	t keyring_file_add_key "{\"name\":\"hk\",\"path\":\"$tmp/hk\"}"
	t nvmf_create_subsystem "{\"nqn\":\"$nqn-auth\"}"
	t nvmf_subsystem_add_ns "{\"nqn\":\"$nqn-auth\",\"namespace\":{\"bdev_name\":\"M0\"}}"
	t nvmf_subsystem_add_listener "{\"nqn\":\"$nqn-auth\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$port\"}}"
	t nvmf_subsystem_add_host "{\"nqn\":\"$nqn-auth\",\"host\":\"$keyed\",\"dhchap_key\":\"hk\"}"
fi
if [ "${GGA_FLOOD_AUTH_COUNT:-100}" -gt 0 ]; then
	timeout -k 5 $((secs + 60)) python3 "$authpy" attack hold --addr 127.0.0.1 --port "$port" \
		--subnqn "$nqn-auth" --hostnqn "$keyed" --count "${GGA_FLOOD_AUTH_COUNT:-100}" \
		--seconds $((secs + 3)) --digest sha512 --dhgroup ffdhe8192 \
		--ready-file "$tmp/auth-ready" >"$tmp/hold.out" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 200); do [ -e "$tmp/auth-ready" ] && break; sleep 0.1; done
fi
timeout -k 5 $((secs + 60)) python3 "$root/test/integration/nvme_tcp_client.py" --port "$port" \
	--tls-port "$tls_port" --nqn "$nqn" --hostnqn "$host" --count "${GGA_FLOOD_COUNT:-1000}" \
	--tls-count "${GGA_FLOOD_TLS_COUNT:-100}" \
	--seconds "$secs" flood-time
[ -e "$tmp/auth-ready" ] && echo "half-finished DH-HMAC-CHAP exchanges at the start: $(cat "$tmp/auth-ready")"
