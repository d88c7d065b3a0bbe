#!/usr/bin/env bash
# gga's NVMe/TCP host authenticating (DH-HMAC-CHAP) to the Linux kernel's
# target (inside the test VM, with a kernel built with CONFIG_NVME_TARGET_AUTH:
# run_tests.sh boots Debian 12's 6.12 kernel for it). nvmet + nvmet-tcp set up
# through configfs: one subsystem with a file-backed namespace on 127.0.0.1,
# open to two hosts only, each with a dhchap_key:
#   host 1: SHA-256, the null DH group, no controller key (one way);
#   host 2: SHA-384, ffdhe2048 and a dhchap_ctrl_key (bidirectional).
# bdevperf (-w verify) attaches with the right keys, one way and both ways,
# and verifies; gga_tgt's bdev_nvme_attach_controller is refused with a wrong
# key (by nvmet), a wrong controller key (by gga: the controller's response
# does not match), and no key at all (gga: the controller requires
# DH-HMAC-CHAP), and still attaches with the right key afterwards. configfs is
# torn down afterwards, whatever happened.
source "$(dirname "$0")/../../integration/common.sh"
source "$(dirname "$0")/../guest_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/run_tests.sh)"
[ -x "$BIN/bdevperf" ] || skip "$BIN/bdevperf is not built"
KCONFIG=$VM_KERNEL_TREE/boot/config-${GGA_VM_KVER:-$(uname -r)}
grep -q '^CONFIG_NVME_TARGET_AUTH=y' "$KCONFIG" 2>/dev/null ||
	skip "the guest kernel ${GGA_VM_KVER:-} has no NVMe target in-band authentication (CONFIG_NVME_TARGET_AUTH); test/vm/run_tests.sh runs this test with Debian's 6.12 kernel"
vm_modprobe nvmet nvmet-tcp 2>"$TMP/modprobe.err" ||
	skip "the nvmet/nvmet-tcp kernel modules do not load: $(head -1 "$TMP/modprobe.err")"
CFS=/sys/kernel/config/nvmet
[ -d "$CFS" ] || skip "no nvmet configfs at $CFS"

NQN=nqn.2016-06.io.gga:linux-nvmet-auth
H1=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
H2=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
PORT_ID=42
PORT=$(free_port)
IMG=$TMP/nvmet-ns.img
SIZE_MIB=32
KEYS=$TMP/keys

# Secrets in files (the keyring's), all from one Python run: hk1 (HH 01,
# 32 bytes), hk2 (HH 02, 48), ck2 (HH 03, 64) and wrong ones.
mkdir -m 700 "$KEYS"
python3 - "$KEYS" <<'EOF'
import base64, os, struct, sys, zlib
def secret(hh, n):
    k = os.urandom(n)
    return "DHHC-1:%02d:%s:" % (hh, base64.b64encode(k + struct.pack("<I", zlib.crc32(k))).decode())
for name, hh, n in (("hk1", 1, 32), ("hk2", 2, 48), ("ck2", 3, 64), ("wrong", 1, 32), ("wrongc", 3, 64)):
    with open(os.path.join(sys.argv[1], name), "w") as f:
        f.write(secret(hh, n) + "\n")
EOF
chmod 600 "$KEYS"/*

nvmet_teardown() {
	local s=$CFS/subsystems/$NQN p=$CFS/ports/$PORT_ID h
	[ -L "$p/subsystems/$NQN" ] && rm -f "$p/subsystems/$NQN"
	[ -d "$p" ] && rmdir "$p"
	if [ -d "$s" ]; then
		for h in "$H1" "$H2"; do
			[ -L "$s/allowed_hosts/$h" ] && rm -f "$s/allowed_hosts/$h"
		done
		[ -d "$s/namespaces/1" ] && echo 0 >"$s/namespaces/1/enable" &&
			rmdir "$s/namespaces/1"
		rmdir "$s"
	fi
	for h in "$H1" "$H2"; do
		[ -d "$CFS/hosts/$h" ] && rmdir "$CFS/hosts/$h"
	done
	return 0
}
# Daemons first (they hold connections to the kernel target), then configfs.
trap 'cleanup; nvmet_teardown 2>/dev/null' EXIT

# nvmet_host NQN KEY HASH DHGROUP [CTRL_KEY]: a host entry with its secrets.
nvmet_host() {
	local h=$CFS/hosts/$1 a
	mkdir "$h" || return 1
	for a in dhchap_key dhchap_hash dhchap_dhgroup dhchap_ctrl_key; do
		[ -e "$h/$a" ] || {
			echo "  nvmet's configfs host entry has no $a"
			return 1
		}
	done
	echo -n "$(cat "$KEYS/$2")" >"$h/dhchap_key" || return 1
	echo -n "$3" >"$h/dhchap_hash" || return 1
	echo -n "$4" >"$h/dhchap_dhgroup" || return 1
	if [ -n "${5:-}" ]; then
		echo -n "$(cat "$KEYS/$5")" >"$h/dhchap_ctrl_key" || return 1
	fi
}

nvmet_setup() {
	local s=$CFS/subsystems/$NQN p=$CFS/ports/$PORT_ID
	nvmet_host "$H1" hk1 'hmac(sha256)' null || return 1
	nvmet_host "$H2" hk2 'hmac(sha384)' ffdhe2048 ck2 || return 1
	mkdir "$s" || return 1
	echo 0 >"$s/attr_allow_any_host" || return 1
	echo GGANVMAUTH >"$s/attr_serial" 2>/dev/null
	ln -s "$CFS/hosts/$H1" "$s/allowed_hosts/$H1" || return 1
	ln -s "$CFS/hosts/$H2" "$s/allowed_hosts/$H2" || return 1
	mkdir "$s/namespaces/1" || return 1
	echo -n "$IMG" >"$s/namespaces/1/device_path" || return 1
	# The file lives on tmpfs, which has no O_DIRECT.
	echo 1 >"$s/namespaces/1/buffered_io" || return 1
	echo 1 >"$s/namespaces/1/enable" || return 1
	mkdir "$p" || return 1
	echo tcp >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo 127.0.0.1 >"$p/addr_traddr" && echo "$PORT" >"$p/addr_trsvcid" || return 1
	ln -s "$s" "$p/subsystems/$NQN"
}

truncate -s ${SIZE_MIB}M "$IMG"
check "nvmet: hosts with dhchap_key (and dhchap_ctrl_key, dhchap_hash, dhchap_dhgroup), a subsystem open to them, TCP 127.0.0.1:$PORT" \
	nvmet_setup
check "the kernel target listens on 127.0.0.1:$PORT" vm_wait_tcp_port "$PORT" 127.0.0.1 20

# attach_json NAME HOSTNQN [extra members]: bdev_nvme_attach_controller's params.
attach_json() {
	printf '{"name":"%s","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%s","subnqn":"%s","hostnqn":"%s"%s}' \
		"$1" "$PORT" "$NQN" "$2" "${3:+,$3}"
}

KEYRING_JSON=
for k in hk1 hk2 ck2 wrong wrongc; do
	KEYRING_JSON+="${KEYRING_JSON:+,}{\"method\":\"keyring_file_add_key\",\"params\":{\"name\":\"$k\",\"path\":\"$KEYS/$k\"}}"
done

# bp NAME HOSTNQN KEYS: bdevperf -w verify (2 s, 4 KiB) through an
# authenticated attach; output in $TMP/NAME.out.
bp() {
	local name=$1
	printf '{"subsystems":[{"subsystem":"keyring","config":[%s]},{"subsystem":"bdev","config":[{"method":"bdev_nvme_attach_controller","params":%s}]}]}\n' \
		"$KEYRING_JSON" "$(attach_json kn "$2" "$3")" >"$TMP/$name.json"
	timeout -k 5 120 "$BIN/bdevperf" --json "$TMP/$name.json" -m 0x1 --mem-size 64m -b knn1 \
		-q 16 -o 4096 -w verify -t 2 >"$TMP/$name.out" 2>&1
}

# bp_verified NAME HOSTNQN KEYS: bp, exit 0, blocks compared, no mismatch.
bp_verified() {
	local rc
	bp "$@"
	rc=$?
	if [ $rc -ne 0 ] || ! verified "$TMP/$1.out" || grep -qi 'run failed' "$TMP/$1.out"; then
		echo "  bdevperf exit $rc:"
		tail -n 20 "$TMP/$1.out" | sed 's/^/  | /'
		return 1
	fi
	grep -m1 'verify: ' "$TMP/$1.out" | sed 's/^/  /'
}

check "bdevperf verify, host 1 with the right dhchap_key (SHA-256, null group)" \
	bp_verified bp1 "$H1" '"dhchap_key":"hk1"'
check "bdevperf verify, host 2 both ways (SHA-384, ffdhe2048, dhchap_ctrlr_key)" \
	bp_verified bp2 "$H2" '"dhchap_key":"hk2","dhchap_ctrlr_key":"ck2"'
check "the data landed in the kernel target's namespace file" \
	test "$(tr -d '\0' <"$IMG" | head -c 1 | wc -c)" = 1

# refused NAME HOSTNQN KEYS REASON: gga_tgt's attach fails, its answer says REASON.
refused() {
	local out
	out=$(rpc h0 bdev_nvme_attach_controller "$(attach_json "$1" "$2" "$3")" 2>&1)
	echo "  answer: $(echo "$out" | tr '\n' ' ' | cut -c1-300)"
	grep -q -- "$4" <<<"$out"
}

if start_tgt h0 --mem-size 64m; then
	H0=$TGT_PID
	for k in hk1 hk2 ck2 wrong wrongc; do
		rpc h0 keyring_file_add_key "{\"name\":\"$k\",\"path\":\"$KEYS/$k\"}" >/dev/null ||
			not_ok "keyring_file_add_key $k"
	done
	# nvmet answers a wrong response with Failure1 and drops the controller
	# (a "fatal error") at once: at times the connection closes before the
	# Failure1 reaches the host. Its log says why in any case.
	k0=$(dmesg | wc -l)
	check "a wrong dhchap_key: refused (Failure1, or the connection closed with it)" \
		refused x1 "$H1" '"dhchap_key":"wrong"' "Failure1\|connection closed by the controller"
	check "a wrong dhchap_key: nvmet logged the host's response mismatch" \
		bash -c "dmesg | tail -n +$((k0 + 1)) | grep -q 'host response mismatch'"
	# gga's host finds the controller's response wrong and sends Failure2;
	# nvmet drops the controller on it, at times before the Authentication
	# Send of the Failure2 completes, and the host then reports the closed
	# connection rather than its own reason. Either way nvmet had accepted
	# the host's response: it logged no mismatch.
	k0=$(dmesg | wc -l)
	check "a wrong dhchap_ctrlr_key: gga's host refuses the controller's response" \
		refused x2 "$H2" '"dhchap_key":"hk2","dhchap_ctrlr_key":"wrongc"' \
		"wrong controller response\|connection closed by the controller"
	check_fails "a wrong dhchap_ctrlr_key: nvmet had accepted the host's own response (no mismatch in its log)" \
		bash -c "dmesg | tail -n +$((k0 + 1)) | grep -E 'host response mismatch|failure1'"
	check "no key for a host nvmet authenticates: refused (the controller requires DH-HMAC-CHAP)" \
		refused x3 "$H1" "" "requires DH-HMAC-CHAP"
	check "the refusals left no controller behind" \
		test "$(rpc h0 bdev_nvme_get_controllers | jget - 'len(d)')" = 0
	if rpc h0 bdev_nvme_attach_controller "$(attach_json kn "$H2" '"dhchap_key":"hk2","dhchap_ctrlr_key":"ck2"')" \
		>"$TMP/attach.json" 2>&1; then
		ok "after them, the right keys (both ways) attach"
		check "the attach created bdev knn1 of ${SIZE_MIB} MiB" \
			bash -c "grep -q '\"knn1\"' '$TMP/attach.json' &&
				test \"\$($BIN/gga_rpc -s $TMP/h0.sock bdev_get_bdevs '{\"name\":\"knn1\"}' |
					python3 -c 'import json,sys; d = json.load(sys.stdin)[0]; print(d[\"block_size\"] * d[\"num_blocks\"])')\" = $((SIZE_MIB << 20))"
		check "bdev_nvme_detach_controller" rpc h0 bdev_nvme_detach_controller '{"name":"kn"}'
	else
		not_ok "after them, the right keys (both ways) attach"
		cat "$TMP/attach.json"
	fi
	check_fails "no log line holds key material" \
		grep -q -F -e "$(cut -d: -f3 "$KEYS/hk2" | cut -c5-30)" -e "$(cut -d: -f3 "$KEYS/ck2" | cut -c5-30)" \
		"$TMP/h0.log" "$TMP/bp1.out" "$TMP/bp2.out"
	stop_tgt "$H0"
	check "gga_tgt exits cleanly after talking to the Linux target" test $? -eq 0
else
	not_ok "gga_tgt starts"
fi
if [ "$N_FAIL" -ne 0 ]; then
	echo "  --- kernel log (nvmet):"
	dmesg | grep -i nvme | tail -n 20 | sed 's/^/  | /'
fi

cleanup
PIDS=()
nvmet_teardown
check "configfs torn down" \
	test ! -e "$CFS/subsystems/$NQN" -a ! -e "$CFS/ports/$PORT_ID" -a ! -e "$CFS/hosts/$H1" -a ! -e "$CFS/hosts/$H2"
finish
