#!/usr/bin/env bash
# The array's health where NVMe tools look (docs/NVME.md "Health"): a
# gga_tgt exports a gga bdev over three malloc members, a malloc bdev and a
# file bdev on a tmpfs too small for it; nvmf_health.py, an NVMe/TCP host,
# reads the SMART / Health and Error Information logs while a member is
# deleted and replaced, the temperature threshold is crossed and the file
# bdev's writes fail, and waits for each asynchronous event. Then the
# target's log names each change once.
source "$(dirname "$0")/common.sh"

NQN=nqn.2016-06.io.gga:health
PORT=$(free_port)
SMALL=$TMP/small
MOUNTED=0

unmount_small() {
	[ "$MOUNTED" = 1 ] && umount "$SMALL" 2>/dev/null
	MOUNTED=0
}
trap 'unmount_small; cleanup' EXIT

start_tgt t -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
ok "gga_tgt starts"

for m in HA HB HC; do
	rpc t bdev_malloc_create --name $m --num_blocks 8224 --block_size 2048 --md_size 64 >/dev/null
done
check "a gga bdev over three malloc members" \
	rpc t bdev_gga_create --name gga0 --data_1 HA --data_2 HB --parity HC
rpc t bdev_malloc_create --name plain --num_blocks 1024 --block_size 512 >/dev/null

# A file bdev of 4 MiB (sparse) on a 1 MiB tmpfs: its writes fail once the tmpfs is full.
FILE_NS=()
mkdir -p "$SMALL"
if mount -t tmpfs -o size=1m tmpfs "$SMALL" 2>"$TMP/mount.err"; then
	MOUNTED=1
	if rpc t bdev_file_create --name small --filename "$SMALL/f.img" --block_size 4096 \
		--num_blocks 1024 >/dev/null; then
		FILE_NS=(--file-ns)
	else
		not_ok "a file bdev on the small tmpfs"
	fi
else
	echo "# the file bdev part is left out: cannot mount a tmpfs ($(cat "$TMP/mount.err"))"
fi

rpc t nvmf_create_transport --trtype TCP >/dev/null
rpc t nvmf_create_subsystem --nqn $NQN --serial_number GGAHEALTH --allow_any_host true >/dev/null
rpc t nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"gga0\", \"nsid\": 1}}" >/dev/null
rpc t nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"plain\", \"nsid\": 2}}" >/dev/null
if [ ${#FILE_NS[@]} -gt 0 ]; then
	rpc t nvmf_subsystem_add_ns "{\"nqn\": \"$NQN\", \"namespace\": {\"bdev_name\": \"small\", \"nsid\": 3}}" >/dev/null
fi
check "a TCP listener on 127.0.0.1:$PORT" rpc t nvmf_subsystem_add_listener \
	"{\"nqn\": \"$NQN\", \"listen_address\": {\"trtype\": \"TCP\", \"adrfam\": \"IPv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"$PORT\"}}"

timeout -k 5 180 python3 "$GGA_ROOT/test/integration/nvmf_health.py" --port "$PORT" --nqn $NQN \
	--rpc "$BIN/gga_rpc -s $TMP/t.sock" "${FILE_NS[@]}"
rc=$?
check "nvmf_health.py ran to its end (exit $rc)" test $rc -eq 0

check "the target logged the namespace degraded once" \
	test "$(grep -c 'namespace 1 (bdev gga0) is degraded' "$TMP/t.log")" = 1
check "and whole again once" \
	test "$(grep -c 'namespace 1 (bdev gga0) is whole again' "$TMP/t.log")" = 1
if [ ${#FILE_NS[@]} -gt 0 ]; then
	check "the target logged the file namespace degraded" \
		grep -q 'namespace 3 (bdev small) is degraded' "$TMP/t.log"
	rpc t nvmf_subsystem_remove_ns "{\"nqn\": \"$NQN\", \"nsid\": 3}" >/dev/null
	rpc t bdev_file_delete --name small >/dev/null
fi
kill -TERM "$TGT_PID"
wait "$TGT_PID"
rc=$?
check "gga_tgt exits 0 on SIGTERM (exit $rc)" test $rc -eq 0
check "no sanitizer report" bash -c "! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' '$TMP/t.log'"
unmount_small
finish
