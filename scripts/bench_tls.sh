#!/usr/bin/env bash
# The cost of TLS on NVMe/TCP (secure channels, TLS 1.3 with a PSK): gga's
# bdevperf against a gga_tgt malloc namespace on 127.0.0.1, through a
# plaintext listener and through a secure_channel listener, side by side in
# one run (alternating, RUNS times each): 4 KiB random reads (queue depth
# 32) and 128 KiB writes (queue depth 8). The record layer is OpenSSL's in
# user space on both sides (no kTLS on this kernel): every byte is encrypted
# by the sender and decrypted by the receiver on the cores that also run
# NVMe/TCP. Prints per workload the median IOPS and MiB/s of each and the
# TLS/plaintext ratio. With --spdk DIR (issue 34) SPDK does the same beside
# it in the same run: SPDK's nvmf_tgt (core 0, its ssl socket for the secure
# channel) and SPDK's bdevperf (core 1); each system's target runs only
# during its own turn, as SPDK's reactors busy-poll. SPDK is built as
# docs/TESTING.md says ("Building the SPDK peer").
#
#   scripts/bench_tls.sh [-n RUNS] [-t SECONDS] [--spdk DIR]
#   (default 3 runs of 5 s)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
runs=3
secs=5
spdk=
while [ $# -gt 0 ]; do
	case "$1" in
	-n) runs=$2 && shift ;;
	-t) secs=$2 && shift ;;
	--spdk) spdk=$2 && shift ;;
	*) echo "usage: bench_tls.sh [-n RUNS] [-t SECONDS] [--spdk DIR]" >&2 && exit 2 ;;
	esac
	shift
done
tmp=$(mktemp -d /tmp/gga-bench-tls.XXXXXX)
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"
bench_lib_init

plain_port=$(free_port 2)
tls_port=$((plain_port + 1))
host=nqn.2014-08.org.nvmexpress:uuid:7e2d1c0b-3a4f-4b5c-8d6e-7f8091a2b3c4
# No newline at the end: SPDK takes the file whole as the interchange PSK.
(umask 077 && python3 "$root/test/integration/nvme_tls_peer.py" gen-key --hash 1 | tr -d "\n" >"$tmp/psk")
systems=gga
if [ -n "$spdk" ]; then
	[ -x "$spdk/build/bin/nvmf_tgt" ] && [ -x "$spdk/build/examples/bdevperf" ] ||
		{ echo "bench_tls: no SPDK build in $spdk" >&2 && exit 2; }
	[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1024 ] || echo 1024 >/proc/sys/vm/nr_hugepages
	mount | grep -q ' /dev/hugepages type hugetlbfs' ||
		{ mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages; }
	systems="gga spdk"
fi
tgt_pid=

# up_gga / up_spdk: the system's target on core 0 with a plaintext and a
# secure-channel subsystem, each a malloc namespace of 256 MiB.
up_gga() {
	"$bin/gga_tgt" -m 0x1 -r "$tmp/t.sock" >"$tmp/t.log" 2>&1 &
	tgt_pid=$!
	pids+=($!)
	for _ in $(seq 1 100); do grep -q ': ready' "$tmp/t.log" && break; sleep 0.1; done
	t() { "$bin/gga_rpc" -s "$tmp/t.sock" "$@" >/dev/null || { echo "bench_tls: $1 failed" >&2; exit 1; }; }
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
}
up_spdk() {
	"$spdk/build/bin/nvmf_tgt" -m 0x1 -r "$tmp/s.sock" --disable-cpumask-locks >"$tmp/s.log" 2>&1 &
	tgt_pid=$!
	pids+=($!)
	for _ in $(seq 1 100); do
		[ -S "$tmp/s.sock" ] && "$spdk/scripts/rpc.py" -s "$tmp/s.sock" spdk_get_version >/dev/null 2>&1 && break
		sleep 0.2
	done
	s() { "$spdk/scripts/rpc.py" -s "$tmp/s.sock" "$@" >"$tmp/s.rpc" 2>&1 || { tail -3 "$tmp/s.rpc" >&2; echo "bench_tls: SPDK $1 failed" >&2; exit 1; }; }
	s keyring_file_add_key psk "$tmp/psk"
	s nvmf_create_transport -t TCP
	for kind in plain tls; do
		nqn=nqn.2016-06.io.gga:bench-$kind
		s bdev_malloc_create -b "M_$kind" 256 4096
		if [ $kind = plain ]; then
			s nvmf_create_subsystem "$nqn" -a
			s nvmf_subsystem_add_ns "$nqn" "M_$kind"
			s nvmf_subsystem_add_listener "$nqn" -t tcp -f ipv4 -a 127.0.0.1 -s "$plain_port"
		else
			s nvmf_create_subsystem "$nqn"
			s nvmf_subsystem_add_ns "$nqn" "M_$kind"
			s nvmf_subsystem_add_listener "$nqn" -t tcp -f ipv4 -a 127.0.0.1 -s "$tls_port" -k
			s nvmf_subsystem_add_host "$nqn" "$host" --psk psk
		fi
	done
}
tgt_down() {
	kill "$tgt_pid" 2>/dev/null
	wait "$tgt_pid" 2>/dev/null
}

# The hosts' configurations (the same JSON for both bdevperfs).
for kind in plain tls; do
	port=$plain_port extra=
	[ $kind = tls ] && port=$tls_port extra=',"psk":"psk"'
	printf '{"subsystems":[{"subsystem":"keyring","config":[{"method":"keyring_file_add_key","params":{"name":"psk","path":"%s"}}]},{"subsystem":"bdev","config":[{"method":"bdev_nvme_attach_controller","params":{"name":"N","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s","subnqn":"nqn.2016-06.io.gga:bench-%s","hostnqn":"%s"%s}}]}]}\n' \
		"$tmp/psk" "$port" "$kind" "$host" "$extra" >"$tmp/$kind.json"
done

# run SYSTEM KIND WORKLOAD QD SIZE: "IOPS MiB/s" of one bdevperf run on core 1
# (gga's reads of written blocks: --prefill, so that no read is served from
# the kernel's zero page; SPDK's malloc is real memory).
run() {
	if [ "$1" = spdk ]; then
		timeout -k 5 $((secs + 120)) "$spdk/build/examples/bdevperf" --json "$tmp/$2.json" -m 0x2 \
			-w "$3" -q "$4" -o "$5" -t "$secs" 2>&1 | tr -d '\r' >"$tmp/bp.out"
		awk '/^ *Total *:/ { print $3, $4; f = 1 } END { if (!f) exit 1 }' "$tmp/bp.out" ||
			{ echo "bench_tls: SPDK bdevperf $2 $3 failed" >&2; tail -5 "$tmp/bp.out" >&2; exit 1; }
		return
	fi
	local prefill=
	[ "$3" = randread ] && prefill=--prefill
	timeout -k 5 $((secs + 120)) "$bin/bdevperf" --json "$tmp/$2.json" -b Nn1 -m 0x2 -w "$3" -q "$4" \
		-o "$5" -t "$secs" $prefill >"$tmp/bp.out" 2>&1 ||
		{ echo "bench_tls: bdevperf $2 $3 failed" >&2; tail -5 "$tmp/bp.out" >&2; exit 1; }
	awk '$1 == "Total" { print $3, $4 }' "$tmp/bp.out"
}
median() { sort -n | sed -n "$(((runs + 1) / 2))p"; }

echo "TLS cost: bdevperf -> target malloc on 127.0.0.1 ($systems), $runs alternating runs of ${secs} s each"
for w in "randread 32 4096 4KiB-randread-qd32" "write 8 131072 128KiB-write-qd8"; do
	read -r wl qd size label <<<"$w"
	for sys in $systems; do : >"$tmp/$sys.plain.iops" && : >"$tmp/$sys.tls.iops"; done
	for _ in $(seq 1 "$runs"); do
		for sys in $systems; do
			up_$sys
			for kind in plain tls; do
				run "$sys" $kind "$wl" "$qd" "$size" >>"$tmp/$sys.$kind.iops"
			done
			tgt_down
		done
	done
	for sys in $systems; do
		p=$(awk '{ print $1 }' "$tmp/$sys.plain.iops" | median)
		s=$(awk '{ print $1 }' "$tmp/$sys.tls.iops" | median)
		echo "$s" >"$tmp/$sys.tls.median"
		awk -v p="$p" -v s="$s" -v l="$label" -v sz="$size" -v sys="$sys" 'BEGIN {
			printf "%-5s %-22s plaintext %9.0f IOPS %8.1f MiB/s   TLS %9.0f IOPS %8.1f MiB/s   TLS/plaintext %.2f\n",
				sys, l, p, p * sz / 1048576, s, s * sz / 1048576, s / p }'
	done
	if [ -n "$spdk" ]; then
		awk -v g="$(cat "$tmp/gga.tls.median")" -v s="$(cat "$tmp/spdk.tls.median")" -v l="$label" \
			'BEGIN { printf "      %-22s TLS gga / SPDK %.2f\n", l, g / s }'
	fi
done
