#!/usr/bin/env bash
# NVMe in-band authentication (DH-HMAC-CHAP) between the Linux kernel's
# NVMe/TCP host and gga_tgt (inside the test VM, with a kernel built with
# CONFIG_NVME_HOST_AUTH: run_tests.sh boots Debian 12's 6.12 kernel for it).
# gga_tgt exports two malloc namespaces on 127.0.0.1: subsystem 1 requires
# the host's key, subsystem 2 also has a controller key (bidirectional).
#   a. nvme connect --dhchap-secret attaches subsystem 1; O_DIRECT writes of
#      a few blocks read back the same;
#   b. --dhchap-secret + --dhchap-ctrl-secret attaches subsystem 2 (the kernel
#      checks gga_tgt too);
#   c. a wrong --dhchap-secret is refused (no namespace), and gga_tgt still
#      serves the host with the right key afterwards (the data is there);
#   d. a wrong --dhchap-ctrl-secret: the kernel refuses the controller;
#   e. no secret at all for a host that must authenticate: refused;
#   f. gga_tgt logged "authenticated queue" for the admin and the I/O queues.
# Disconnects everything on every exit path.
source "$(dirname "$0")/../../integration/common.sh"
source "$(dirname "$0")/../guest_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/run_tests.sh)"
command -v nvme >/dev/null || skip "nvme-cli is not installed"
KCONFIG=$VM_KERNEL_TREE/boot/config-${GGA_VM_KVER:-$(uname -r)}
grep -qE '^CONFIG_NVME_(HOST_)?AUTH=y' "$KCONFIG" 2>/dev/null ||
	skip "the guest kernel ${GGA_VM_KVER:-} has no NVMe in-band authentication (CONFIG_NVME_HOST_AUTH); test/vm/run_tests.sh runs this test with Debian's 6.12 kernel"
nvme connect --help 2>&1 | grep -q -- --dhchap-ctrl-secret ||
	skip "this nvme-cli has no --dhchap-ctrl-secret"

HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
HOSTID=$(cat /proc/sys/kernel/random/uuid)
NQN1=nqn.2016-06.io.gga:vmauth1
NQN2=nqn.2016-06.io.gga:vmauth2
KEYS=$TMP/keys
CONNECTED=()

vm_cleanup() {
	local n
	for n in "${CONNECTED[@]}" "$NQN1" "$NQN2"; do
		nvme disconnect -n "$n" >/dev/null 2>&1
	done
	cleanup
}
trap vm_cleanup EXIT

check "nvme-tcp module loads" vm_modprobe nvme-tcp

# Secrets: the host's from nvme-cli (HH 01: SHA-256 transform), the others
# (and the wrong ones) from Python in one go: each program costs a second
# under TCG. key_of NAME prints one.
mkdir -m 700 "$KEYS"
nvme gen-dhchap-key --hmac=1 --nqn "$HOSTNQN" >"$KEYS/hk" 2>/dev/null &&
	grep -q '^DHHC-1:01:' "$KEYS/hk" || rm -f "$KEYS/hk"
python3 - "$KEYS" <<'EOF'
import base64, os, struct, sys, zlib
def secret(hh, n):
    k = os.urandom(n)
    return "DHHC-1:%02d:%s:" % (hh, base64.b64encode(k + struct.pack("<I", zlib.crc32(k))).decode())
want = {"ck": (2, 48), "wrong": (1, 32), "wrongc": (2, 48), "hk": (1, 32)}
for name, (hh, n) in want.items():
    path = os.path.join(sys.argv[1], name)
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(secret(hh, n) + "\n")
EOF
chmod 600 "$KEYS"/*
key_of() {
	cat "$KEYS/$1"
}
check "DH-HMAC-CHAP secrets (host key from nvme gen-dhchap-key)" \
	test -s "$KEYS/hk" -a -s "$KEYS/ck" -a -s "$KEYS/wrong" -a -s "$KEYS/wrongc"

PORT=$(free_port)
listener() {
	printf '{"nqn":"%s","listen_address":{"trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s"}}' \
		"$1" "$PORT"
}
setup_target() {
	setup_target_rpcs >"$TMP/setup.log" 2>&1 || {
		cat "$TMP/setup.log"
		return 1
	}
}
setup_target_rpcs() {
	rpc t0 keyring_file_add_key "{\"name\":\"hk\",\"path\":\"$KEYS/hk\"}" &&
		rpc t0 keyring_file_add_key "{\"name\":\"ck\",\"path\":\"$KEYS/ck\"}" &&
		rpc t0 bdev_malloc_create '{"name":"M1","num_blocks":32768,"block_size":512}' &&
		rpc t0 bdev_malloc_create '{"name":"M2","num_blocks":32768,"block_size":512}' &&
		rpc t0 nvmf_create_transport '{"trtype":"TCP"}' &&
		rpc t0 nvmf_create_subsystem "{\"nqn\":\"$NQN1\",\"serial_number\":\"GGAVMAUTH1\"}" &&
		rpc t0 nvmf_subsystem_add_ns "{\"nqn\":\"$NQN1\",\"namespace\":{\"bdev_name\":\"M1\"}}" &&
		rpc t0 nvmf_subsystem_add_listener "$(listener "$NQN1")" &&
		rpc t0 nvmf_subsystem_add_host "{\"nqn\":\"$NQN1\",\"host\":\"$HOSTNQN\",\"dhchap_key\":\"hk\"}" &&
		rpc t0 nvmf_create_subsystem "{\"nqn\":\"$NQN2\",\"serial_number\":\"GGAVMAUTH2\"}" &&
		rpc t0 nvmf_subsystem_add_ns "{\"nqn\":\"$NQN2\",\"namespace\":{\"bdev_name\":\"M2\"}}" &&
		rpc t0 nvmf_subsystem_add_listener "$(listener "$NQN2")" &&
		rpc t0 nvmf_subsystem_add_host \
			"{\"nqn\":\"$NQN2\",\"host\":\"$HOSTNQN\",\"dhchap_key\":\"hk\",\"dhchap_ctrlr_key\":\"ck\"}"
}

# connect NQN [nvme connect args...]: nvme connect (bounded); output in $TMP/conn.log.
connect() {
	local nqn=$1 rc
	shift
	timeout 90 nvme connect -t tcp -a 127.0.0.1 -s "$PORT" -n "$nqn" \
		--hostnqn "$HOSTNQN" --hostid "$HOSTID" --ctrl-loss-tmo 5 "$@" >"$TMP/conn.log" 2>&1
	rc=$?
	[ $rc -eq 0 ] && CONNECTED+=("$nqn")
	return $rc
}

# attached NQN [args...]: connect succeeds and the namespace appears ($DEV).
attached() {
	local nqn=$1
	if ! connect "$@"; then
		cat "$TMP/conn.log"
		return 1
	fi
	DEV=$(vm_nvme_wait_ns "$nqn" 30) || return 1
	echo "  $nqn: $DEV"
}

# refused NQN [args...]: connect fails and no controller of NQN is left.
refused() {
	local nqn=$1
	if connect "$@"; then
		echo "  nvme connect succeeded: $(cat "$TMP/conn.log")"
		return 1
	fi
	echo "  nvme connect: $(tr '\n' ' ' <"$TMP/conn.log")"
	! vm_nvme_ns_of "$nqn" >/dev/null &&
		! grep -qx "$nqn" /sys/class/nvme/nvme*/subsysnqn 2>/dev/null
}

disconnect() {
	local nqn=$1 out
	out=$(timeout 60 nvme disconnect -n "$nqn" 2>&1)
	echo "$out" | grep -q 'disconnected 1 controller' || {
		echo "  $out"
		return 1
	}
	vm_retry 20 bash -c "! grep -qx '$nqn' /sys/class/nvme/nvme*/subsysnqn 2>/dev/null"
}

# write_read DEV TAG: 16 random 4 KiB blocks at block 100 with O_DIRECT, read
# back the same way; remembers the checksum in $TMP/TAG.sum.
write_read() {
	local dev=$1 tag=$2
	head -c 65536 /dev/urandom >"$TMP/$tag.pat"
	sha256sum <"$TMP/$tag.pat" | cut -d' ' -f1 >"$TMP/$tag.sum"
	dd if="$TMP/$tag.pat" of="$dev" bs=4k seek=100 oflag=direct conv=notrunc,fsync status=none ||
		return 1
	read_back "$dev" "$tag"
}

# read_back DEV TAG: what write_read wrote is there.
read_back() {
	local got
	got=$(dd if="$1" bs=4k skip=100 count=16 iflag=direct status=none | sha256sum | cut -d' ' -f1)
	[ "$got" = "$(cat "$TMP/$2.sum")" ] || {
		echo "  read back $got, wrote $(cat "$TMP/$2.sum")"
		return 1
	}
}

if ! start_tgt t0 --mem-size 64m; then
	not_ok "gga_tgt starts"
	finish
fi
T0=$TGT_PID
check "gga_tgt: two subsystems on 127.0.0.1:$PORT, the host with a key (and a controller key on the second)" \
	setup_target

# (a) one way.
start=$(date +%s)
if attached "$NQN1" --dhchap-secret "$(key_of hk)"; then
	ok "(a) nvme connect --dhchap-secret attaches $NQN1 ($(($(date +%s) - start)) s)"
	check "(a) O_DIRECT write of 16 blocks reads back the same" write_read "$DEV" a
	check "(a) nvme disconnect" disconnect "$NQN1"
else
	not_ok "(a) nvme connect --dhchap-secret attaches $NQN1"
fi

# (b) both ways.
start=$(date +%s)
if attached "$NQN2" --dhchap-secret "$(key_of hk)" --dhchap-ctrl-secret "$(key_of ck)"; then
	ok "(b) nvme connect --dhchap-secret --dhchap-ctrl-secret (bidirectional) attaches $NQN2 ($(($(date +%s) - start)) s)"
	check "(b) O_DIRECT write of 16 blocks reads back the same" write_read "$DEV" b
	check "(b) nvme disconnect" disconnect "$NQN2"
else
	not_ok "(b) nvme connect --dhchap-secret --dhchap-ctrl-secret attaches $NQN2"
fi

# (c) a wrong host key, then the right one again.
check "(c) a wrong --dhchap-secret is refused, no namespace appears" \
	refused "$NQN1" --dhchap-secret "$(key_of wrong)"
check "(c) gga_tgt logged the wrong response" \
	grep -q "DH-HMAC-CHAP of host $HOSTNQN .* of $NQN1 failed" "$TMP/t0.log"
if attached "$NQN1" --dhchap-secret "$(key_of hk)"; then
	ok "(c) gga_tgt still attaches the host with the right key afterwards"
	check "(c) the data written in (a) is still there" read_back "$DEV" a
	check "(c) nvme disconnect" disconnect "$NQN1"
else
	not_ok "(c) gga_tgt still attaches the host with the right key afterwards"
fi

# (d) the kernel checks the controller with a wrong controller key.
check "(d) a wrong --dhchap-ctrl-secret: the kernel refuses the controller, no namespace" \
	refused "$NQN2" --dhchap-secret "$(key_of hk)" --dhchap-ctrl-secret "$(key_of wrongc)"
check "(d) gga_tgt logged the host's Failure2" \
	grep -q "of $NQN2 failed: the host sent Failure2" "$TMP/t0.log"

# (e) no secret for a host that must authenticate.
check "(e) no secret at all is refused, no namespace" refused "$NQN1"

# (f) the target's log.
for n in "$NQN1" "$NQN2"; do
	n_admin=$(grep -c "host $HOSTNQN .*authenticated queue 0 of $n " "$TMP/t0.log")
	n_io=$(grep -c "host $HOSTNQN .*authenticated queue [1-9][0-9]* of $n " "$TMP/t0.log")
	check "(f) gga_tgt logged authenticated admin queues of $n ($n_admin) and I/O queues ($n_io)" \
		test "$n_admin" -ge 1 -a "$n_io" -ge 1
done
check "(f) the admin queue of $NQN2 was authenticated both ways" \
	grep -q "authenticated queue 0 of $NQN2 (DH-HMAC-CHAP .*, bidirectional)" "$TMP/t0.log"
grep -m3 'authenticated queue' "$TMP/t0.log" | sed 's/^/  | /'
check_fails "no log line holds key material" \
	grep -q -F -e "$(cut -d: -f3 "$KEYS/hk" | cut -c5-30)" -e "$(cut -d: -f3 "$KEYS/ck" | cut -c5-30)" \
	"$TMP/t0.log"

check "gga_tgt is still alive and answers RPCs" \
	bash -c "kill -0 $T0 && $BIN/gga_rpc -s $TMP/t0.sock nvmf_get_subsystems >/dev/null"
for n in "$NQN1" "$NQN2"; do
	nvme disconnect -n "$n" >/dev/null 2>&1
done
CONNECTED=()
stop_tgt "$T0"
check "gga_tgt shuts down cleanly (exit 0)" test $? -eq 0
finish
