#!/usr/bin/env bash
# The tools operators run, against the front of the topology (inside the
# test VM): the kernel's NVMe/TCP host attaches the gga bdev, and nvme-cli's
# id-ctrl, id-ns, ns-descs, smart-log, error-log, fw-log, effects-log and
# get-feature (every feature, every select), and smartctl -a, read it
# without an error. Then a half-block target is SIGKILLed: the SMART log
# shows the reliability-degraded warning and the kernel reports the
# asynchronous event (its NVME_AEN uevent); once the target is back and the
# member resynced, the warning is gone. Linux enables only the notice
# events in AEC (nvme_enable_aen), so the test turns the SMART ones on with
# Set Features, as an operator who wants them would (docs/NVME.md).
source "$(dirname "$0")/../../integration/common.sh"
source "$GGA_ROOT/test/vm/guest_lib.sh"

D=$TMP/topo
TOPO_TIMEOUT=180
source "$GGA_ROOT/test/integration/topology_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/run_tests.sh)"
command -v nvme >/dev/null || skip "nvme-cli is not installed"
command -v smartctl >/dev/null || skip "smartctl is not installed (scripts/pkgdep.sh --vm)"

HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
HOSTID=$(cat /proc/sys/kernel/random/uuid)
NQN=nqn.2016-06.io.gga:gga0
CONNECTED=0

vm_cleanup() {
	touch "$TMP/uevent.stop"
	[ $CONNECTED -eq 0 ] || timeout 60 nvme disconnect -n $NQN >/dev/null 2>&1
	topo down >/dev/null 2>&1
	cleanup
}
trap vm_cleanup EXIT

vm_modprobe nvme-tcp || skip "the nvme-tcp module does not load"

topo up --size 16 >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up (exit $rc)" test $rc -eq 0
if [ $rc -ne 0 ]; then
	cat "$TMP/up.out"
	finish
fi
# shellcheck disable=SC1091
source "$D/topology.env"
timeout 60 nvme connect -t tcp -a 127.0.0.1 -s "$base_port" -n $NQN --hostnqn "$HOSTNQN" \
	--hostid "$HOSTID" --ctrl-loss-tmo 60 >"$TMP/conn.log" 2>&1 && CONNECTED=1 ||
	{ cat "$TMP/conn.log"; dmesg | tail -15; }
check "nvme connect to the front" test $CONNECTED -eq 1
DEV=$(vm_nvme_wait_ns $NQN 30) || DEV=
check "the gga bdev is a block device ($DEV)" test -n "$DEV"
CTRL=
for c in /sys/class/nvme/nvme*; do
	[ "$(cat "$c/subsysnqn" 2>/dev/null)" = $NQN ] && CTRL=/dev/$(basename "$c")
done
check "the controller's character device ($CTRL)" test -c "$CTRL"
[ -n "$DEV" ] && [ -c "$CTRL" ] || finish

# tool NAME CMD...: CMD exits 0 (its output in $TMP/NAME.out, shown if it fails).
tool() {
	local name=$1
	shift
	if timeout 60 "$@" >"$TMP/$name.out" 2>&1; then
		return 0
	fi
	echo "# $* failed:"
	sed 's/^/#   /' "$TMP/$name.out" | head -20
	return 1
}
# field NAME KEY: the value of "KEY : value" in nvme-cli's normal output.
field() {
	sed -n "s/^$2[[:space:]]*:[[:space:]]*//p" "$TMP/$1.out" | head -1
}

check "nvme id-ctrl" tool idctrl nvme id-ctrl "$CTRL"
check "id-ctrl: 16 Error Information entries (elpe $(field idctrl elpe))" \
	test "$(field idctrl elpe)" = 15
check "id-ctrl: SMART per namespace and the effects log (lpa $(field idctrl lpa))" \
	test $(($(field idctrl lpa) & 3)) -eq 3
check "id-ctrl: the thresholds (wctemp $(field idctrl wctemp), cctemp $(field idctrl cctemp))" \
	test "$(field idctrl wctemp)/$(field idctrl cctemp)" = 343/358
check "nvme id-ns" tool idns nvme id-ns "$DEV"
check "id-ns: 4096 blocks of 4 KiB (nsze $(field idns nsze))" test "$(field idns nsze)" = 0x1000
check "nvme ns-descs" tool nsdescs nvme ns-descs "$DEV"
check "ns-descs: the namespace's UUID" grep -qi '^uuid' "$TMP/nsdescs.out"
check "nvme smart-log" tool smart nvme smart-log "$CTRL" -o json
check "smart-log: no critical warning, spare 100 % at threshold 66 %" \
	test "$(jget "$TMP/smart.out" '"%d %d %d" % (d["critical_warning"], d["avail_spare"], d["spare_thresh"])')" = "0 100 66"
check "nvme error-log" tool errlog nvme error-log "$CTRL"
check "nvme fw-log" tool fwlog nvme fw-log "$CTRL"
check "fw-log: slot 1 active" grep -qi 'afi.*0x1\|afi.*: 1' "$TMP/fwlog.out"
# nvme-cli 2.3 asks for the command set (-c 0, NVM) over fabrics: without it, it
# reads CAP through PCI registers, finds none, and prints nothing (fixed in 2.4).
check "nvme effects-log" tool effects nvme effects-log "$CTRL" -c 0
effects_ok() { # Identify (admin 06h) and Read (I/O 02h) supported, Write (01h) changes content
	nvme effects-log "$CTRL" -c 0 -b >"$TMP/effects.bin" 2>/dev/null &&
		python3 -c 'import struct, sys
d = open(sys.argv[1], "rb").read()
acs, iocs = struct.unpack_from("<256I", d, 0), struct.unpack_from("<256I", d, 1024)
sys.exit(0 if acs[6] & 1 and iocs[2] & 1 and iocs[1] & 3 == 3 else 1)' "$TMP/effects.bin"
}
check "effects-log: Identify and Read supported, Write changes content" effects_ok
bad=
for fid in 0x01 0x02 0x04 0x05 0x07 0x0a 0x0b 0x0f; do
	for sel in 0 1 2 3; do
		tool feat nvme get-feature "$CTRL" -f $fid -s $sel -n 1 || bad+=" $fid/$sel"
	done
done
check "nvme get-feature: Arbitration, Power Management, Temperature Threshold, Error Recovery, Number of Queues, Write Atomicity, AEC, KATO with each select (failed:${bad:- none})" \
	test -z "$bad"
# Over fabrics only the 128-bit identifier exists: EXHID (dword 11 bit 0) must be set.
check "nvme get-feature: Host Identifier (EXHID)" tool hostid nvme get-feature "$CTRL" -f 0x81 -c 1 -l 16
check "get-feature: it is the host's (--hostid $HOSTID)" \
	grep -qi "$(echo "$HOSTID" | tr -d - | cut -c1-8 | sed 's/\(..\)\(..\)\(..\)\(..\)/\1 \2 \3 \4/')" "$TMP/hostid.out"
check "smartctl -a" tool smartctl smartctl -a "$CTRL"
check "smartctl: the health self-assessment PASSED" \
	grep -q 'self-assessment test result: PASSED' "$TMP/smartctl.out"

# SMART events on: what Linux set (the notices) and the critical warnings.
aec=$(nvme get-feature "$CTRL" -f 0x0b 2>/dev/null | sed -n 's/.*Current value:\(0x[0-9a-fA-F]*\).*/\1/p')
check "AEC read ($aec)" test -n "$aec"
check "SMART events enabled" tool setaec nvme set-feature "$CTRL" -f 0x0b -v $((aec | 0xff))

# The kernel's record of an asynchronous event: its NVME_AEN uevent.
cat >"$TMP/uevent.py" <<'PY'
import os, socket, sys, time
out, stop = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)  # NETLINK_KOBJECT_UEVENT
s.bind((os.getpid(), 1))
s.settimeout(0.5)
open(out + ".ready", "w").close()
deadline = time.monotonic() + 280
while not os.path.exists(stop) and time.monotonic() < deadline:
    try:
        msg = s.recv(65536)
    except socket.timeout:
        continue
    parts = msg.split(b"\0")
    aen = [p.decode() for p in parts if p.startswith(b"NVME_AEN=")]
    if aen:
        with open(out, "a") as f:
            f.write("%s %s\n" % (parts[0].decode(errors="replace"), " ".join(aen)))
PY
python3 "$TMP/uevent.py" "$TMP/uevents" "$TMP/uevent.stop" &
PIDS+=("$!")
vm_retry 10 test -e "$TMP/uevents.ready"

dmesg -c >/dev/null 2>&1
topo kill-target 2 >/dev/null 2>&1
degraded() {
	nvme smart-log "$CTRL" -o json >"$TMP/smart2.out" 2>/dev/null &&
		[ "$(jget "$TMP/smart2.out" 'd["critical_warning"]')" = 4 ]
}
check "after the parity target's SIGKILL: smart-log shows reliability degraded (critical warning 0x4)" \
	vm_retry 60 degraded
check "smart-log: available spare 66 % at threshold 66 %" \
	test "$(jget "$TMP/smart2.out" '"%d %d" % (d["avail_spare"], d["spare_thresh"])')" = "66 66"
aen_seen() {
	grep -q 'NVME_AEN=0x020001' "$TMP/uevents" 2>/dev/null
}
check "the kernel reported the SMART / health event (NVME_AEN=0x020001: reliability, log 02h)" \
	vm_retry 30 aen_seen
cat "$TMP/uevents" 2>/dev/null | sed 's/^/# uevent: /'
timeout 60 smartctl -a "$CTRL" >"$TMP/smartctl2.out" 2>&1
src=$?
check "smartctl -a while degraded: FAILED, critical warning 0x04 (exit $src)" \
	bash -c "grep -q 'self-assessment test result: FAILED' '$TMP/smartctl2.out' &&
		grep -q 'Critical Warning:[[:space:]]*0x04' '$TMP/smartctl2.out' && [ \$(($src & 8)) -ne 0 ]"
check "I/O goes on: a direct read of the namespace" \
	dd if="$DEV" of=/dev/null bs=4096 count=64 iflag=direct status=none
check "the kernel logged no I/O error" bash -c "! dmesg | grep -E 'I/O error, dev $(basename "$DEV")'"

topo start-target 2 >"$TMP/start2.out" 2>&1
check "the parity target is back" test $? -eq 0
track
whole() {
	nvme smart-log "$CTRL" -o json >"$TMP/smart3.out" 2>/dev/null &&
		[ "$(jget "$TMP/smart3.out" '"%d %d" % (d["critical_warning"], d["avail_spare"])')" = "0 100" ]
}
check "after the resync the warning is gone, spare 100 %" vm_retry 120 whole
check "smartctl -a: PASSED again" tool smartctl3 smartctl -a "$CTRL"
check "the front logged the namespace degraded and whole again" \
	bash -c "grep -q 'is degraded' '$D/front.log' && grep -q 'is whole again' '$D/front.log'"

touch "$TMP/uevent.stop"
out=$(timeout 60 nvme disconnect -n $NQN 2>&1)
check "nvme disconnect ($out)" bash -c "echo '$out' | grep -q disconnected"
CONNECTED=0
topo down >"$TMP/down.out" 2>&1
check "down: every daemon exits 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" -ge 4
finish
