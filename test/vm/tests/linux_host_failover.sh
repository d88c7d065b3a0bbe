#!/usr/bin/env bash
# Front failover under the Linux kernel host (inside the test VM): the
# topology with two fronts (scripts/gga_topology.sh --fronts 2), the kernel's
# native NVMe multipath connected to both fronts' listeners as two paths of
# one block device. A writer keeps O_DIRECT writes of known blocks going
# while the active front is SIGKILLed. Then: no write failed, the kernel
# logged no I/O error, every block reads back as written, the standby's path
# is now the optimized one; the longest time a write took (the stall the
# host saw) is printed. The guest is emulated (TCG): times are longer than
# on a real machine (docs/BENCHMARKS.md has the figure measured outside).
source "$(dirname "$0")/../../integration/common.sh"
source "$GGA_ROOT/test/vm/guest_lib.sh"

D=$TMP/topo
TOPO_TIMEOUT=180
source "$GGA_ROOT/test/integration/topology_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/run_tests.sh)"
command -v nvme >/dev/null || skip "nvme-cli is not installed"

HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
HOSTID=$(cat /proc/sys/kernel/random/uuid)
NQN=nqn.2016-06.io.gga:gga0
CONNECTED=0

vm_cleanup() {
	[ $CONNECTED -eq 0 ] || timeout 60 nvme disconnect -n $NQN >/dev/null 2>&1
	topo down >/dev/null 2>&1
	cleanup
}
trap vm_cleanup EXIT

states_are() { # STATE_OF_FRONT STATE_OF_FRONT2
	[ "$(vm_path_ana_state "$P1") $(vm_path_ana_state "$P2")" = "$1 $2" ]
}

vm_modprobe nvme-tcp || skip "the nvme-tcp module does not load"
[ "$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)" = Y ] ||
	skip "the kernel's NVMe native multipath is off"

# A longer lease than the default: five daemons share two emulated CPUs.
topo up --fronts 2 --size 16 --members malloc --lease-ms 3000 >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up with two fronts (exit $rc)" test $rc -eq 0
if [ $rc -ne 0 ]; then
	cat "$TMP/up.out"
	tail -n 20 "$D"/front*.log
	finish
fi
# shellcheck disable=SC1091
source "$D/topology.env"
P1=$base_port
P2=$((base_port + k + m + 1))

for port in "$P1" "$P2"; do
	CONNECTED=0
	timeout 60 nvme connect -t tcp -a 127.0.0.1 -s "$port" -n $NQN --hostnqn "$HOSTNQN" \
		--hostid "$HOSTID" --ctrl-loss-tmo 60 >"$TMP/conn.log" 2>&1 && CONNECTED=1 ||
		{ cat "$TMP/conn.log"; dmesg | tail -15; }
	check "nvme connect to the front on $port" test $CONNECTED -eq 1
done
DEV=$(vm_nvme_wait_ns $NQN 30) || DEV=
check "one multipath block device over both fronts ($DEV)" test -n "$DEV"
check "the kernel reads ANA: front optimized, front2 inaccessible" \
	vm_retry 20 states_are optimized inaccessible
[ -n "$DEV" ] || finish

# The writer: 64 KiB O_DIRECT writes of blocks that name their offset and
# pass, over 4 MiB, until the stop file appears; then every block is read
# back. It prints the writes, the failures and the longest write in ms.
cat >"$TMP/writer.py" <<'PY'
import mmap, os, sys, time
dev, stop, out = sys.argv[1], sys.argv[2], sys.argv[3]
BS, N = 65536, 64
fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, BS)
last = {}
writes = fails = 0
worst = 0.0
deadline = time.monotonic() + 240
p = 0
while not os.path.exists(stop) and time.monotonic() < deadline:
    p += 1
    for i in range(N):
        buf.seek(0)
        buf.write((b"%08d:%08d:" % (i, p)) * (BS // 18) + b"\0" * (BS % 18))
        t = time.monotonic()
        try:
            os.pwrite(fd, buf, i * BS)
            last[i] = p
        except OSError as e:
            fails += 1
            print("write %d failed: %s" % (i, e), flush=True)
        worst = max(worst, time.monotonic() - t)
        writes += 1
bad = 0
for i, q in sorted(last.items()):
    rb = mmap.mmap(-1, BS)
    os.preadv(fd, [rb], i * BS)
    if rb[:18] != b"%08d:%08d:" % (i, q):
        bad += 1
        print("block %d: expected pass %d, read %r" % (i, q, rb[:18]), flush=True)
with open(out, "w") as f:
    f.write("%d %d %d %d\n" % (writes, fails, int(worst * 1000), bad))
PY
rm -f "$TMP/stop"
python3 "$TMP/writer.py" "$DEV" "$TMP/stop" "$TMP/writer.res" >"$TMP/writer.out" 2>&1 &
wp=$!
PIDS+=("$wp")
# Writes first flow through front (its path is the optimized one), then it dies.
sleep 5
topo kill-target front >/dev/null 2>&1
check "front2 active and serving after the SIGKILL" \
	bash -c "for i in \$(seq 1 600); do \"$BIN/gga_rpc\" -s '$D/front2.sock' -t 10 bdev_gga_get_info '{\"name\":\"gga0\"}' 2>/dev/null | grep -q '\"serving\": true' && exit 0; sleep 0.1; done; exit 1"
sleep 5
touch "$TMP/stop"
wait $wp
check "the writer ended (exit $?)" test -s "$TMP/writer.res"
read -r writes fails worst bad <"$TMP/writer.res" || true
echo "# Linux host across the failover: ${writes:-?} writes, ${fails:-?} failed, longest write ${worst:-?} ms (emulated guest, lease 3000 ms)"
cat "$TMP/writer.out"
check "no write failed at the host" test "${fails:-1}" = 0
check "every block reads back as last written" test "${bad:-1}" = 0
check "the kernel logged no I/O error on the device" \
	bash -c "! dmesg | grep -E 'I/O error, dev $(basename "$DEV")'"
front2_optimized() {
	[ "$(vm_path_ana_state "$P2")" = optimized ]
}
check "the kernel now uses front2's path (optimized)" vm_retry 20 front2_optimized
out=$(timeout 60 nvme disconnect -n $NQN 2>&1)
check "nvme disconnect ($out)" bash -c "echo '$out' | grep -q disconnected"
CONNECTED=0
topo down >"$TMP/down.out" 2>&1
check "down: the daemons left exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" -ge 4
finish
