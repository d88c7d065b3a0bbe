#!/usr/bin/env bash
# Admission under a connection flood (issue 33): how long a new host takes to
# get in while 1,000 silent sockets hold a plaintext listener of gga_tgt and
# 100 stalled TLS handshakes its secure_channel listener, every one the
# target closes reopened at once (an attacker keeping the flood up). The host
# is test/integration/nvme_tcp_client.py (ICReq, admin and I/O Connect, a
# read), retried every 100 ms; the default transport options. Prints one line.
#
#   scripts/bench_admission.sh [-t SECONDS]      (give up after SECONDS, default 30)
#   GGA_BUILD=DIR picks the binaries (default build/); GGA_FLOOD_COUNT and
#   GGA_FLOOD_TLS_COUNT change the flood (0 and 0: the time without one).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
secs=30
while [ $# -gt 0 ]; do
	case "$1" in
	-t) secs=$2 && shift ;;
	*) echo "usage: bench_admission.sh [-t SECONDS]" >&2 && exit 2 ;;
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
tgt_start t 0x1 || exit 1
t() { tgt_rpc t "$@" || { echo "bench_admission: $1 failed" >&2; exit 1; }; }
nqn=nqn.2016-06.io.gga:bench-admission
host=nqn.2014-08.org.nvmexpress:uuid:0b9f8a3c-1d2e-4f50-8a6b-7c8d9e0f1a2b
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
timeout -k 5 $((secs + 60)) python3 "$root/test/integration/nvme_tcp_client.py" --port "$port" \
	--tls-port "$tls_port" --nqn "$nqn" --hostnqn "$host" --count "${GGA_FLOOD_COUNT:-1000}" \
	--tls-count "${GGA_FLOOD_TLS_COUNT:-100}" \
	--seconds "$secs" flood-time
