#!/usr/bin/env bash
# The cost of TLS on NVMe/TCP (secure channels, TLS 1.3 with a PSK): gga's
# bdevperf against a gga_tgt malloc namespace on 127.0.0.1, through a
# plaintext listener and through a secure_channel listener, side by side in
# one run (alternating, RUNS times each): 4 KiB random reads (queue depth
# 32) and 128 KiB writes (queue depth 8). The record layer is OpenSSL's in
# user space on both sides (no kTLS on this kernel): every byte is encrypted
# by the sender and decrypted by the receiver on the cores that also run
# NVMe/TCP. Prints per workload the median IOPS and MiB/s of each and the
# TLS/plaintext ratio.
#
#   scripts/bench_tls.sh [-n RUNS] [-t SECONDS]      (default 3 runs of 5 s)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
runs=3
secs=5
while [ $# -gt 0 ]; do
	case "$1" in
	-n) runs=$2 && shift ;;
	-t) secs=$2 && shift ;;
	*) echo "usage: bench_tls.sh [-n RUNS] [-t SECONDS]" >&2 && exit 2 ;;
	esac
	shift
done
tmp=$(mktemp -d /tmp/gga-bench-tls.XXXXXX)
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"
bench_lib_init

plain_port=$(free_port 2)
tls_port=$((plain_port + 1))
tgt_start t 0x1 || exit 1
t() { tgt_rpc t "$@" || { echo "bench_tls: $1 failed" >&2; exit 1; }; }
host=nqn.2014-08.org.nvmexpress:uuid:7e2d1c0b-3a4f-4b5c-8d6e-7f8091a2b3c4
(umask 077 && python3 "$root/test/integration/nvme_tls_peer.py" gen-key --hash 1 >"$tmp/psk")
t keyring_file_add_key "{\"name\":\"psk\",\"path\":\"$tmp/psk\"}"
t nvmf_create_transport '{"trtype":"TCP"}'
for kind in plain tls; do
	nqn=nqn.2016-06.io.gga:bench-$kind
	port=$plain_port secure=
	[ $kind = tls ] && port=$tls_port secure=',"secure_channel":true'
	t bdev_malloc_create "{\"name\":\"M_$kind\",\"num_blocks\":65536,\"block_size\":4096}"
	t nvmf_create_subsystem "{\"nqn\":\"$nqn\",\"allow_any_host\":$([ $kind = plain ] && echo true || echo false)}"
	t nvmf_subsystem_add_ns "{\"nqn\":\"$nqn\",\"namespace\":{\"bdev_name\":\"M_$kind\"}}"
	t nvmf_subsystem_add_listener "{\"nqn\":\"$nqn\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$port\"}$secure}"
done
t nvmf_subsystem_add_host "{\"nqn\":\"nqn.2016-06.io.gga:bench-tls\",\"host\":\"$host\",\"psk\":\"psk\"}"
for kind in plain tls; do
	port=$plain_port extra=
	[ $kind = tls ] && port=$tls_port extra=',"psk":"psk"'
	printf '{"subsystems":[{"subsystem":"keyring","config":[{"method":"keyring_file_add_key","params":{"name":"psk","path":"%s"}}]},{"subsystem":"bdev","config":[{"method":"bdev_nvme_attach_controller","params":{"name":"N","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s","subnqn":"nqn.2016-06.io.gga:bench-%s","hostnqn":"%s"%s}}]}]}\n' \
		"$tmp/psk" "$port" "$kind" "$host" "$extra" >"$tmp/$kind.json"
done

# run KIND WORKLOAD QD SIZE: "IOPS MiB/s" of one bdevperf run (reads of written blocks:
# --prefill, so that no read is served from the kernel's zero page).
run() {
	local prefill=
	[ "$2" = randread ] && prefill=--prefill
	timeout -k 5 $((secs + 120)) "$bin/bdevperf" --json "$tmp/$1.json" -b Nn1 -m 0x2 -w "$2" -q "$3" \
		-o "$4" -t "$secs" $prefill >"$tmp/bp.out" 2>&1 ||
		{ echo "bench_tls: bdevperf $1 $2 failed" >&2; tail -5 "$tmp/bp.out" >&2; exit 1; }
	awk '$1 == "Total" { print $3, $4 }' "$tmp/bp.out"
}
median() { sort -n | sed -n "$(((runs + 1) / 2))p"; }

echo "TLS cost: gga bdevperf -> gga_tgt malloc on 127.0.0.1, $runs alternating runs of ${secs} s each"
for w in "randread 32 4096 4KiB-randread-qd32" "write 8 131072 128KiB-write-qd8"; do
	read -r wl qd size label <<<"$w"
	: >"$tmp/plain.iops"
	: >"$tmp/tls.iops"
	for _ in $(seq 1 "$runs"); do
		for kind in plain tls; do
			run $kind "$wl" "$qd" "$size" >>"$tmp/$kind.iops"
		done
	done
	p=$(awk '{ print $1 }' "$tmp/plain.iops" | median)
	s=$(awk '{ print $1 }' "$tmp/tls.iops" | median)
	awk -v p="$p" -v s="$s" -v l="$label" -v sz="$size" 'BEGIN {
		printf "%-22s plaintext %9.0f IOPS %8.1f MiB/s   TLS %9.0f IOPS %8.1f MiB/s   TLS/plaintext %.2f\n",
			l, p, p * sz / 1048576, s, s * sz / 1048576, s / p }'
done
