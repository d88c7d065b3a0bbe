#!/usr/bin/env bash
# The cost of DH-HMAC-CHAP at connect: the time of bdev_nvme_attach_controller
# (TCP connect, Fabrics Connect, authentication of the admin queue, the
# controller's initialisation, Identify) from one gga_tgt to another on
# 127.0.0.1, without authentication and with each DH group (SHA-256, one way),
# side by side in one run. An I/O queue adds one more exchange of the same
# cost when it connects. Prints one line per case: the median of RUNS
# attaches and its ratio to the attach without authentication.
#
#   scripts/bench_auth.sh [-n RUNS]        (default 7)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
runs=7
[ "${1:-}" = -n ] && runs=$2
tmp=$(mktemp -d /tmp/gga-bench-auth.XXXXXX)
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"
bench_lib_init

port=$(free_port)
tgt_start t 0x1 || exit 1
tgt_start h 0x2 || exit 1
t() { tgt_rpc t "$@"; }
h() { tgt_rpc h "$@"; }
host=nqn.2014-08.org.nvmexpress:uuid:5b1c0d9e-2f3a-4b4c-9d5e-6f708192a3b4
python3 -c 'import base64, os, struct, zlib
k = os.urandom(32)
print("DHHC-1:00:%s:" % base64.b64encode(k + struct.pack("<I", zlib.crc32(k))).decode())' >"$tmp/k"
chmod 600 "$tmp/k"
t keyring_file_add_key "{\"name\":\"k\",\"path\":\"$tmp/k\"}"
h keyring_file_add_key "{\"name\":\"k\",\"path\":\"$tmp/k\"}"
t bdev_malloc_create '{"name":"M","num_blocks":1024,"block_size":512}'
t nvmf_create_transport '{"trtype":"TCP"}'
for nqn in open auth; do
	t nvmf_create_subsystem "{\"nqn\":\"nqn.2016-06.io.gga:$nqn\",\"allow_any_host\":$([ $nqn = open ] && echo true || echo false)}"
	t nvmf_subsystem_add_ns "{\"nqn\":\"nqn.2016-06.io.gga:$nqn\",\"namespace\":{\"bdev_name\":\"M\"}}"
	t nvmf_subsystem_add_listener "{\"nqn\":\"nqn.2016-06.io.gga:$nqn\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$port\"}}"
done
t nvmf_subsystem_add_host "{\"nqn\":\"nqn.2016-06.io.gga:auth\",\"host\":\"$host\",\"dhchap_key\":\"k\"}"

# median_ms NQN EXTRA: the median attach time (ms) of $runs attaches and detaches.
median_ms() {
	local i s e ms=()
	for i in $(seq 1 "$runs"); do
		s=$(date +%s%N)
		h bdev_nvme_attach_controller "{\"name\":\"B\",\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$port\",\"subnqn\":\"nqn.2016-06.io.gga:$1\",\"hostnqn\":\"$host\"$2}" ||
			{ echo "bench_auth: attach failed" >&2; exit 1; }
		e=$(date +%s%N)
		h bdev_nvme_detach_controller '{"name":"B"}'
		ms+=($(((e - s) / 1000)))
	done
	printf '%s\n' "${ms[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p"
}

base=$(median_ms open "")
awk -v b="$base" 'BEGIN { printf "%-32s %8.1f ms  1.00x\n", "no authentication", b / 1000 }'
for g in null ffdhe2048 ffdhe3072 ffdhe4096 ffdhe6144 ffdhe8192; do
	t nvmf_set_config "{\"dhchap_digests\":[\"sha256\"],\"dhchap_dhgroups\":[\"$g\"]}"
	us=$(median_ms auth ',"dhchap_key":"k"')
	awk -v u="$us" -v b="$base" -v g="$g" \
		'BEGIN { printf "%-32s %8.1f ms  %.2fx\n", "DH-HMAC-CHAP sha256, " g, u / 1000, u / b }'
done
