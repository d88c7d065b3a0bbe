#!/usr/bin/env bash
# Failures a user can cause get a message that says what to do (issue 11,
# part 5; the README's troubleshooting section lists them): an RPC socket in
# use, a port in use, an address not of this host, no RDMA device, a bdev that
# is already a base of another, gga members of different sizes or without
# metadata, a --json file that fails. Nothing is half-created meanwhile.
source "$(dirname "$0")/common.sh"

start_tgt e0 || {
	not_ok "gga_tgt starts"
	finish
}
E0=$TGT_PID
err() { rpc e0 "$@" 2>&1 >/dev/null; }

# The socket in use.
timeout -k 5 20 "$BIN/gga_tgt" -r "$TMP/e0.sock" >"$TMP/dup.log" 2>&1
rc=$?
check "a second gga_tgt on the same socket exits 1 (exit $rc)" test $rc -eq 1
check "... saying to stop the other or use -r" grep -q 'another gga_tgt? stop it, or give this one its own socket with -r PATH' "$TMP/dup.log"
check "... and the first one still serves" rpc e0 rpc_get_methods >/dev/null

# Ports and addresses.
NQN=nqn.2016-06.io.gga:errors
rpc e0 nvmf_create_transport --trtype tcp >/dev/null
rpc e0 nvmf_create_subsystem --nqn $NQN --allow_any_host true >/dev/null
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True)
time.sleep(30)' >"$TMP/busy.port" &
PIDS+=($!)
for _ in $(seq 1 50); do [ -s "$TMP/busy.port" ] && break; sleep 0.1; done
BUSY=$(cat "$TMP/busy.port")
listen() { printf '{"nqn":"%s","listen_address":{"trtype":"tcp","adrfam":"ipv4","traddr":"%s","trsvcid":"%s"}}' $NQN "$1" "$2"; }
check "a port in use: says to choose another trsvcid or stop the program (ss -ltnp)" bash -c \
	"'$BIN/gga_rpc' -s '$TMP/e0.sock' nvmf_subsystem_add_listener '$(listen 127.0.0.1 "$BUSY")' 2>&1 |
		grep -q 'in use by another program: choose another trsvcid, or stop the program listening there (ss -ltnp shows it)'"
check "an address not of this host: says so (ip addr)" bash -c \
	"'$BIN/gga_rpc' -s '$TMP/e0.sock' nvmf_subsystem_add_listener '$(listen 192.0.2.77 4420)' 2>&1 |
		grep -q 'is not an address of this host (ip addr lists them)'"
check "no listener was half-created" test \
	"$(rpc e0 nvmf_get_subsystems | jget - '[len(s["listen_addresses"]) for s in d if s["nqn"] == "'$NQN'"]')" = "[0]"

# No RDMA device.
if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	echo "this machine has RDMA devices ($(ls /sys/class/infiniband | tr '\n' ' ')): the no-device message is not checked"
elif ! grep -q 'CONFIG_RDMA := y' "$GGA_ROOT/mk/config.mk" || [ "${GGA_BUILD##*/}" = build-nordma ]; then
	check "a build without RDMA says how to get it" bash -c \
		"'$BIN/gga_rpc' -s '$TMP/e0.sock' nvmf_create_transport --trtype rdma 2>&1 | grep -q 'configure --with-rdma'"
else
	check "no RDMA device: says to load the driver or set up SoftRoCE" bash -c \
		"'$BIN/gga_rpc' -s '$TMP/e0.sock' nvmf_create_transport --trtype rdma 2>&1 |
			grep -q 'no RDMA device (load the NIC.s driver and rdma_ucm; without an RDMA NIC, SoftRoCE: modprobe rdma_rxe'"
fi
check "no RDMA transport was half-created" test \
	"$(rpc e0 nvmf_get_transports | jget - '[t["trtype"] for t in d]')" = '["TCP"]'

# A bdev that is already a base of another; gga members that do not match.
for m in A B C D; do
	rpc e0 bdev_malloc_create --name $m --num_blocks 1024 --block_size 2048 --md_size 64 >/dev/null
done
rpc e0 bdev_malloc_create --name BIG --num_blocks 2048 --block_size 2048 --md_size 64 >/dev/null
for m in N1 N2 N3; do
	rpc e0 bdev_malloc_create --name $m --num_blocks 1024 --block_size 2048 >/dev/null
done
rpc e0 bdev_gga_create --name G0 --data_1 A --data_2 B --parity C >/dev/null
check "gga create with a member of another gga bdev: names the gga module, says what to do" bash -c \
	"'$BIN/gga_rpc' -s '$TMP/e0.sock' bdev_gga_create --name G1 --data_1 A --data_2 D --parity BIG 2>&1 |
		grep -q \"data_1 'A': base bdev is a base of another bdev (claimed by the gga module): delete or remove that first, or choose another base\""
check "exporting a gga member: says to export the gga bdev instead" bash -c \
	"'$BIN/gga_rpc' -s '$TMP/e0.sock' nvmf_subsystem_add_ns '{\"nqn\":\"$NQN\",\"namespace\":{\"bdev_name\":\"B\"}}' 2>&1 |
		grep -q 'bdev B is a base of another bdev (claimed by the gga module): export that bdev instead, or delete it first'"
check "an error bdev over a gga member: the same" bash -c \
	"'$BIN/gga_rpc' -s '$TMP/e0.sock' bdev_error_create --base_name C 2>&1 | grep -q 'claimed by the gga module): delete or remove that first'"
rpc e0 bdev_malloc_create --name E --num_blocks 1024 --block_size 2048 --md_size 64 >/dev/null
check "a member of another size: says every member must have the same size" bash -c \
	"'$BIN/gga_rpc' -s '$TMP/e0.sock' bdev_gga_create --name G2 --data_1 D --data_2 E --parity BIG 2>&1 |
		grep -q 'every member must have the same size'"
check "members without metadata: says to create them with --md_size 64" bash -c \
	"'$BIN/gga_rpc' -s '$TMP/e0.sock' bdev_gga_create --name G3 --data_1 N1 --data_2 N2 --parity N3 2>&1 |
		grep -q 'create the members with --md_size 64'"
check "a member with other metadata: says every member must have the same geometry" bash -c \
	"'$BIN/gga_rpc' -s '$TMP/e0.sock' bdev_gga_create --name G4 --data_1 D --data_2 E --parity N1 2>&1 |
		grep -q 'every member must have the same geometry'"
check "the refused gga bdevs were not half-created (members unclaimed)" test \
	"$(rpc e0 bdev_get_bdevs | jget - '[b["name"] for b in d if b["claimed"] or b["name"].startswith("G")]')" = '["A", "B", "C", "G0"]'
stop_tgt "$E0"

# A --json file that fails names the call and the file.
cat >"$TMP/bad.json" <<JSON
{"subsystems": [{"subsystem": "bdev", "config": [
  {"method": "bdev_malloc_create", "params": {"name": "X", "num_blocks": 8, "block_size": 3}}]}]}
JSON
timeout -k 5 20 "$BIN/gga_tgt" -r "$TMP/e1.sock" --json "$TMP/bad.json" >"$TMP/bad.log" 2>&1
rc=$?
check "a failing --json file: exit 1 (exit $rc)" test $rc -eq 1
check "... the log names the file and says the daemon stops" grep -q "loading $TMP/bad.json failed; shutting down" "$TMP/bad.log"
finish
