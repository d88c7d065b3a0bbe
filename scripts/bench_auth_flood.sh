#!/usr/bin/env bash
# Identify latency of a real host while an attacker floods DH-HMAC-CHAP
# (issue 33; docs/BENCHMARKS.md §12): the target on core 0 with one keyed
# malloc namespace; the real host (test/integration/nvme_auth.py attack
# probe: an authenticated admin and I/O queue doing Identify and a Read every
# 20 ms for 6 s, authenticating a new queue after 1.5 s) while the attacker,
# who knows another keyed host's NQN and not its key, runs 4 rounds of 40
# ffdhe8192 exchanges at once with junk Replies. Prints the probe's JSON
# line (counts, failures, Identify p50/p99/max in ms) and the attacker's.
#
#   scripts/bench_auth_flood.sh [--spdk DIR] [--no-flood]
#   --no-flood: the probe alone (the machine's own noise floor). GGA_BUILD=DIR picks gga's binaries (default build/); --spdk DIR (or
#   SPDK_DIR) runs the same against SPDK's nvmf_tgt (docs/TESTING.md,
#   "Building the SPDK peer"; it needs hugepages, set up here as root).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
spdk=${SPDK_DIR:-}
use_spdk=0
flood=1
while [ $# -gt 0 ]; do
	case "$1" in
	--spdk) spdk=$2 && use_spdk=1 && shift ;;
	--no-flood) flood=0 ;;
	*) echo "usage: bench_auth_flood.sh [--spdk DIR] [--no-flood]" >&2 && exit 2 ;;
	esac
	shift
done
tmp=$(mktemp -d /tmp/gga-bench-authflood.XXXXXX)
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"
bench_lib_init

authpy=$root/test/integration/nvme_auth.py
nqn=nqn.2016-06.io.gga:auth-flood
attacked=nqn.2014-08.org.nvmexpress:uuid:0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e
real=nqn.2014-08.org.nvmexpress:uuid:1d2e3f4a-5b6c-4d7e-9f80-a12b3c4d5e6f
mkdir -m 700 "$tmp/keys"
for k in hk h2; do
	python3 "$authpy" gen-key --hash 1 >"$tmp/keys/$k" && chmod 600 "$tmp/keys/$k"
done
port=$(free_port)
fail() { cat "$tmp/rpc.out" >&2 2>/dev/null; echo "bench_auth_flood: $1" >&2; exit 1; }
if [ $use_spdk = 1 ]; then
	[ -x "$spdk/build/bin/nvmf_tgt" ] || fail "no $spdk/build/bin/nvmf_tgt"
	[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1024 ] || echo 1024 >/proc/sys/vm/nr_hugepages
	mount | grep -q ' /dev/hugepages type hugetlbfs' ||
		{ mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages; }
	"$spdk/build/bin/nvmf_tgt" -m 0x1 -r "$tmp/t.sock" --disable-cpumask-locks >"$tmp/t.log" 2>&1 &
	pids+=($!)
	t() { "$spdk/scripts/rpc.py" -s "$tmp/t.sock" "$@" >"$tmp/rpc.out" 2>&1 || fail "$1 failed"; }
	for _ in $(seq 1 100); do
		[ -S "$tmp/t.sock" ] && "$spdk/scripts/rpc.py" -s "$tmp/t.sock" spdk_get_version >/dev/null 2>&1 && break
		sleep 0.2
	done
	t keyring_file_add_key hk "$tmp/keys/hk"
	t keyring_file_add_key h2 "$tmp/keys/h2"
	t bdev_malloc_create -b M0 1 512
	t nvmf_create_transport -t TCP
	t nvmf_create_subsystem "$nqn"
	t nvmf_subsystem_add_ns "$nqn" M0
	t nvmf_subsystem_add_listener "$nqn" -t tcp -f ipv4 -a 127.0.0.1 -s "$port"
	t nvmf_subsystem_add_host "$nqn" "$attacked" --dhchap-key hk
	t nvmf_subsystem_add_host "$nqn" "$real" --dhchap-key h2
else
	tgt_start t 0x1 || exit 1
	t() { "$bin/gga_rpc" -s "$tmp/t.sock" "$@" >"$tmp/rpc.out" 2>&1 || fail "$1 failed"; }
	t keyring_file_add_key "{\"name\":\"hk\",\"path\":\"$tmp/keys/hk\"}"
	t keyring_file_add_key "{\"name\":\"h2\",\"path\":\"$tmp/keys/h2\"}"
	t bdev_malloc_create '{"name":"M0","num_blocks":2048,"block_size":512}'
	t nvmf_create_transport '{"trtype":"TCP"}'
	t nvmf_create_subsystem "{\"nqn\":\"$nqn\"}"
	t nvmf_subsystem_add_ns "{\"nqn\":\"$nqn\",\"namespace\":{\"bdev_name\":\"M0\"}}"
	t nvmf_subsystem_add_listener "{\"nqn\":\"$nqn\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$port\"}}"
	t nvmf_subsystem_add_host "{\"nqn\":\"$nqn\",\"host\":\"$attacked\",\"dhchap_key\":\"hk\"}"
	t nvmf_subsystem_add_host "{\"nqn\":\"$nqn\",\"host\":\"$real\",\"dhchap_key\":\"h2\"}"
fi

py() { timeout -k 5 90 python3 "$authpy" "$@" --addr 127.0.0.1 --port "$port"; }
py attack probe --subnqn "$nqn" --hostnqn "$real" --secret "$(cat "$tmp/keys/h2")" \
	--dhgroup ffdhe2048 --seconds 6 --new-queue-at 1.5 --ready-file "$tmp/ready" >"$tmp/probe.out" 2>&1 &
probe=$!
for _ in $(seq 1 100); do
	[ -e "$tmp/ready" ] || ! kill -0 "$probe" 2>/dev/null && break
	sleep 0.1
done
[ $flood = 1 ] && py attack flood --subnqn "$nqn" --hostnqn "$attacked" --count 40 --rounds 4 \
	--digest sha512 --dhgroup ffdhe8192 >"$tmp/flood.out" 2>&1
wait "$probe"
echo "probe: $(grep '^{' "$tmp/probe.out" || tail -3 "$tmp/probe.out")"
[ $flood = 1 ] && echo "attacker: $(grep '^{' "$tmp/flood.out" || tail -3 "$tmp/flood.out")"
