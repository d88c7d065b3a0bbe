#!/usr/bin/env bash
# Boot a throwaway qemu VM (TCG, stock Debian kernel) and run one command in it.
#
#   test/vm/vm_run.sh [--mem MiB] [--cpus N] [--timeout SEC] [--log-dir DIR]
#                     [--cwd DIR] -- COMMAND [ARGS...]
#
# The guest sees the host's root file system read-only (virtio-9p) with tmpfs
# on /tmp, /var/tmp, /run, /root and /dev/shm, so binaries built on the host
# (build/bin/*) run unchanged. COMMAND runs as root through bash, in the repo
# directory (or --cwd DIR, which must exist on the host), stdin /dev/null,
# with PATH, LANG, TERM, ASAN_OPTIONS, UBSAN_OPTIONS and every GGA_* variable
# of the caller; its stdout+stderr are streamed to this script's stdout.
# Inside the guest, `source test/vm/guest_lib.sh` gives vm_modprobe,
# vm_rxe_setup and other helpers. Nothing in the guest is kept.
#
# Exit status: COMMAND's status; 77 after "skip: REASON" when the VM cannot
# run on this machine (no qemu, no kernel obtainable, qemu refuses to start);
# 124 when --timeout (default 600 s) expired (qemu is killed); 125 when the
# guest did not boot or died before COMMAND finished. On 124/125 the end of
# the console log and of the guest's dmesg are printed to stderr.
#
# --log-dir DIR keeps console.log (serial console, loglevel=3), output.log
# and, when COMMAND failed, dmesg.log (the guest's whole kernel log) there.
# Defaults: --mem 1024, --cpus 2. GGA_VM_DEBUG=1 boots with loglevel=7 and
# copies the console to stderr. The kernel (a Debian linux-image-*-amd64
# package, unpacked, never installed) is cached in
# ${GGA_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gga-vm}; GGA_VM_KERNEL_PKG
# overrides the package name, GGA_VM_QEMU the qemu binary, GGA_VM_APPEND adds
# to the kernel command line.
set -u
# The whole script is one block, read before it runs: editing this file while
# a VM runs (bash reads scripts as it goes) cannot break that run.
{
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

EXIT_SKIP=77
EXIT_TIMEOUT=124
EXIT_VMFAIL=125

mem=1024
cpus=2
timeout_s=600
log_dir=
cwd=$repo

usage() {
	sed -n '4,5p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--mem) mem=${2:?}; shift 2 ;;
	--cpus) cpus=${2:?}; shift 2 ;;
	--timeout) timeout_s=${2:?}; shift 2 ;;
	--log-dir) log_dir=${2:?}; shift 2 ;;
	--cwd) cwd=$(cd "${2:?}" && pwd) || exit 2; shift 2 ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) echo "vm_run: unknown option '$1'" >&2; usage ;;
	esac
done
[ $# -gt 0 ] || usage

skip() {
	echo "skip: $*"
	exit $EXIT_SKIP
}

log() {
	echo "vm_run: $*" >&2
}

# --- prerequisites -------------------------------------------------------

# Install what is missing (scripts/pkgdep.sh is idempotent but slow-ish).
if ! command -v qemu-system-x86_64 >/dev/null || ! command -v busybox >/dev/null ||
	! command -v cpio >/dev/null || ! command -v modprobe >/dev/null; then
	bash "$repo/scripts/pkgdep.sh" --vm >&2 || true
fi
qemu=${GGA_VM_QEMU:-$(command -v qemu-system-x86_64 || true)}
[ -n "$qemu" ] && [ -x "$qemu" ] ||
	skip "qemu-system-x86_64 is not installed (scripts/pkgdep.sh --vm)"
busybox=
for b in /bin/busybox /usr/bin/busybox; do
	# A dynamically linked busybox would need its libraries in the initramfs.
	if [ -x "$b" ] && ! LC_ALL=C readelf -d "$b" 2>/dev/null | grep -q NEEDED; then
		busybox=$b
		break
	fi
done
[ -n "$busybox" ] || skip "no static busybox (package busybox-static)"
command -v cpio >/dev/null || skip "cpio is not installed"
depmod=$(command -v depmod || echo /sbin/depmod)
modprobe=$(command -v modprobe || echo /sbin/modprobe)
[ -x "$depmod" ] && [ -x "$modprobe" ] || skip "kmod (depmod, modprobe) is not installed"

# --- kernel: download once into the cache --------------------------------

cache=${GGA_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/gga-vm}
mkdir -p "$cache" || skip "cannot create the kernel cache $cache"

# The kernel package the distribution currently points linux-image-amd64 at.
kernel_pkg() {
	if [ -n "${GGA_VM_KERNEL_PKG:-}" ]; then
		echo "$GGA_VM_KERNEL_PKG"
		return
	fi
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-.*-amd64$/ {print $2; exit}'
}

# Find the compressed payload in a bzImage and decompress it (what the
# kernel's scripts/extract-vmlinux does): under TCG the ELF vmlinux boots
# through the PVH entry point, skipping the in-guest decompression.
extract_vmlinux() {
	local bz=$1 dst=$2 magic tool off
	for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08\x00'; do
		tool=${magic%%:*}
		command -v "$tool" >/dev/null || continue
		for off in $(LC_ALL=C grep -aboP "${magic#*:}" "$bz" | cut -d: -f1 | head -5); do
			tail -c +$((off + 1)) "$bz" | "$tool" -dc >"$dst.tmp" 2>/dev/null
			if LC_ALL=C readelf -h "$dst.tmp" 2>/dev/null | grep -q 'ELF64' &&
				LC_ALL=C readelf -n "$dst.tmp" 2>/dev/null | grep -q 'Xen'; then
				mv "$dst.tmp" "$dst"
				return 0
			fi
		done
	done
	rm -f "$dst.tmp"
	return 1
}

# prepare_kernel PKG: unpack PKG into $cache/PKG (tree/, vmlinux or bzImage).
prepare_kernel() {
	local pkg=$1 dir=$cache/$1 work deb kver
	if [ -f "$dir/ready" ]; then
		touch "$dir/ready"
		return 0
	fi
	work=$(mktemp -d "$cache/.work.XXXXXX") || return 1
	log "downloading $pkg into $cache (first run only)"
	if ! (cd "$work" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2); then
		:
	fi
	deb=$(ls "$work"/*.deb 2>/dev/null | head -1)
	if [ -z "$deb" ]; then
		rm -rf "$work"
		return 1
	fi
	if ! dpkg-deb -x "$deb" "$work/tree"; then
		rm -rf "$work"
		return 1
	fi
	rm -f "$deb"
	kver=$(ls "$work/tree/lib/modules" | head -1)
	if [ -z "$kver" ] || [ ! -f "$work/tree/boot/vmlinuz-$kver" ] ||
		! "$depmod" -b "$work/tree" "$kver"; then
		rm -rf "$work"
		return 1
	fi
	echo "$kver" >"$work/kver"
	if extract_vmlinux "$work/tree/boot/vmlinuz-$kver" "$work/vmlinux"; then
		echo vmlinux >"$work/image"
	else
		echo "tree/boot/vmlinuz-$kver" >"$work/image"
	fi
	rm -rf "$dir"
	mv "$work" "$dir" && touch "$dir/ready"
}

kdir=
{
	flock -w 900 9 || log "waiting for the cache lock timed out; going on"
	# A cached kernel younger than a week is good enough: asking apt costs
	# seconds per run.
	kdir=$(find "$cache" -mindepth 2 -maxdepth 2 -name ready -mtime -7 2>/dev/null | head -1)
	kdir=${kdir%/ready}
	[ -n "${GGA_VM_KERNEL_PKG:-}" ] && kdir=
	if [ -n "$kdir" ]; then
		:
	elif pkg=$(kernel_pkg) && [ -n "$pkg" ] && prepare_kernel "$pkg"; then
		kdir=$cache/$pkg
	else
		# Offline or no package lists: fall back to the newest cached kernel.
		kdir=$(ls -dt "$cache"/linux-image-*/ready 2>/dev/null | head -1)
		kdir=${kdir%/ready}
	fi
} 9>"$cache/.lock"
[ -n "$kdir" ] || skip "no guest kernel: could not download ${pkg:-the linux-image-amd64 kernel} and none cached in $cache"
kver=$(cat "$kdir/kver")
kimage=$kdir/$(cat "$kdir/image")
ktree=$kdir/tree

# --- per-run directory: initramfs and the writable share -----------------

run=$(mktemp -d /tmp/gga-vm.XXXXXX) || exit 1
share=$run/share
mkdir -p "$share" "$run/initrd"
qpid=
tailpid=
cleanup() {
	local i
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		kill -TERM "$qpid" 2>/dev/null
		for i in $(seq 1 30); do
			kill -0 "$qpid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$qpid" 2>/dev/null
	fi
	[ -n "$tailpid" ] && kill "$tailpid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Modules the initramfs loads to reach the 9p shares, dependencies first.
ird=$run/initrd
mkdir -p "$ird"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,newroot,mods}
cp "$busybox" "$ird/bin/busybox"
n=0
declare -A seen=()
for m in virtio_pci 9pnet_virtio 9p virtio_rng configfs; do
	while read -r verb path _; do
		[ "$verb" = insmod ] || continue
		[ -z "${seen[$path]:-}" ] || continue
		seen[$path]=1
		n=$((n + 1))
		# Newer Debian kernels (6.12) ship compressed modules; busybox's
		# insmod wants them plain.
		dst=$ird/mods/$(printf '%02d' $n)-$(basename "$path")
		case "$path" in
		*.ko.xz) xz -dc "$path" >"${dst%.xz}" ;;
		*.ko.zst) zstd -dcq "$path" >"${dst%.zst}" ;;
		*.ko.gz) gzip -dc "$path" >"${dst%.gz}" ;;
		*) cp "$path" "$dst" ;;
		esac || { log "cannot copy $path into the initramfs"; exit $EXIT_VMFAIL; }
	done < <("$modprobe" -d "$ktree" -S "$kver" --show-depends "$m" 2>/dev/null)
done
[ $n -gt 0 ] || { log "no virtio/9p modules found in $ktree"; exit $EXIT_VMFAIL; }

# Stage 1 (busybox, in the initramfs): load modules, mount the shares, put
# tmpfs on the writable places, set up what the guest needs and switch to the
# host root. Everything that can happen here does: every program started
# from the 9p root later costs a second or more under TCG.
debug=${GGA_VM_DEBUG:-0}
cat >"$ird/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
die() {
	echo "gga-vm init: \$*" >/dev/console
	echo o >/proc/sysrq-trigger
	sleep 10
}
stamp() {
	[ $debug = 1 ] && echo "gga-vm init: \$(cut -d' ' -f1 /proc/uptime)s \$*" >/dev/console
}
stamp start
for m in /mods/*.ko; do
	insmod "\$m" || die "insmod \$m failed"
done
stamp modules loaded
r=/newroot
o="trans=virtio,version=9p2000.L,msize=512000"
mount -t 9p -o "\$o,ro,cache=loose" hostroot \$r || die "cannot mount the host root"
mount -t tmpfs -o mode=0755 tmpfs \$r/run || die "cannot mount tmpfs on /run"
g=\$r/run/gga-vm
mkdir -p \$g/out \$g/kernel \$g/host \$r/run/lock
mount -t 9p -o "\$o" ggaout \$g/out || die "cannot mount the output share"
echo boot >\$g/out/booted
# The host root as it is, before tmpfs hides parts of it (/tmp, /root).
mount -o bind \$r \$g/host || die "cannot bind the host root"
mount -o bind \$g/host$(printf %q "$ktree") \$g/kernel || die "cannot bind the kernel tree"
for d in tmp var/tmp; do
	mount -t tmpfs -o mode=1777 tmpfs \$r/\$d || die "cannot mount tmpfs on /\$d"
done
mount -t tmpfs -o mode=0700 tmpfs \$r/root
# The repo (and the working directory) stay visible even under a tmpfs.
for p in $(printf '%q ' "$repo" "$cwd"); do
	case "\$p" in
	/tmp/* | /var/tmp/* | /root/* | /root | /run/*)
		mkdir -p \$r\$p
		mount -o bind \$g/host\$p \$r\$p || die "cannot bind \$p"
		;;
	esac
done
mount -t proc proc \$r/proc
mount -t sysfs sysfs \$r/sys
mount -t configfs configfs \$r/sys/kernel/config
mount -t devtmpfs devtmpfs \$r/dev
mkdir -p \$r/dev/pts \$r/dev/shm
mount -t devpts -o gid=5,mode=0620,ptmxmode=0666 devpts \$r/dev/pts
mount -t tmpfs -o mode=1777 tmpfs \$r/dev/shm
ip link set lo up
echo gga-vm >/proc/sys/kernel/hostname
# The guest kernel's modules live in the unpacked Debian package; the
# kernel's own module requests (e.g. from "rdma link add") go through
# this wrapper around the host's kmod modprobe.
echo '#!/bin/sh' >\$g/modprobe
echo 'exec /sbin/modprobe -d /run/gga-vm/kernel "\$@"' >>\$g/modprobe
chmod 0755 \$g/modprobe
echo /run/gga-vm/modprobe >/proc/sys/kernel/modprobe
touch \$g/guest
stamp switching root
exec switch_root \$r /bin/bash $(printf %q "$here/guest_init.sh")
die "switch_root failed"
EOF
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc -R 0:0 --quiet >"$run/initrd.cpio") || exit 1

# What stage 2 (test/vm/guest_init.sh, host bash in the guest) runs.
# One argument is a shell command line (like ssh); several are an argv.
if [ $# -eq 1 ]; then
	printf '%s\n' "$1" >"$share/cmd.sh"
else
	printf '%q ' "$@" >"$share/cmd.sh"
	printf '\n' >>"$share/cmd.sh"
fi
{
	printf 'GGA_VM_CWD=%q\n' "$cwd"
	printf 'GGA_VM_REPO=%q\n' "$repo"
	printf 'GGA_VM_KVER=%q\n' "$kver"
	for v in PATH LANG LC_ALL TZ TERM ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS \
		$(compgen -v | grep '^GGA_' | grep -v '^GGA_VM_\(CACHE\|KERNEL_PKG\)$'); do
		[ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
	done
} >"$share/config"
: >"$share/output"
: >"$run/console.log"

# --- boot ---------------------------------------------------------------

loglevel=3
[ "${GGA_VM_DEBUG:-0}" = 1 ] && loglevel=7
append="console=ttyS0 loglevel=$loglevel panic=-1 random.trust_cpu=on"
# acpi=noirq: routing PCI interrupts through the ACPI interpreter costs
# about half a second per virtio device under TCG (they use MSI-X anyway).
append+=" mitigations=off nokaslr tsc=reliable no_timer_check acpi=noirq rdinit=/init"
# cryptomgr.notests: the crypto self-tests alone take half a second.
append+=" cryptomgr.notests initcall_blacklist=init_kprobe_trace ${GGA_VM_APPEND:-}"

start=$(date +%s%N)
"$qemu" -nodefaults -no-user-config -machine pc,accel=tcg -cpu max -smp "$cpus" \
	-m "$mem" -display none -monitor none -no-reboot \
	-serial "file:$run/console.log" \
	-kernel "$kimage" -initrd "$run/initrd.cpio" -append "$append" \
	-device virtio-rng-pci \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
	-virtfs "local,path=$share,mount_tag=ggaout,security_model=none" \
	</dev/null >"$run/qemu.log" 2>&1 &
qpid=$!

# Stream COMMAND's output while the guest runs.
tail -n +1 -f --pid="$qpid" "$share/output" &
tailpid=$!
if [ "${GGA_VM_DEBUG:-0}" = 1 ]; then
	tail -n +1 -f --pid="$qpid" "$run/console.log" >&2 &
fi

timed_out=0
deadline=$(($(date +%s) + timeout_s))
t_booted=
while kill -0 "$qpid" 2>/dev/null; do
	if [ -z "$t_booted" ] && [ -f "$share/booted" ]; then
		t_booted=$(date +%s%N)
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		timed_out=1
		kill -TERM "$qpid" 2>/dev/null
		sleep 1
		kill -KILL "$qpid" 2>/dev/null
		break
	fi
	sleep 0.2
done
wait "$qpid"
qrc=$?
qpid=
wait "$tailpid" 2>/dev/null
tailpid=
secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN {printf "%.1f", (b - a) / 1e9}')

if [ -n "$log_dir" ]; then
	mkdir -p "$log_dir" &&
		cp "$run/console.log" "$share/output" "$log_dir/" 2>/dev/null
	[ -f "$share/dmesg.log" ] && cp "$share/dmesg.log" "$log_dir/"
	[ -f "$share/output" ] && mv "$log_dir/output" "$log_dir/output.log"
fi

show_logs() {
	echo "--- qemu:" >&2
	tail -20 "$run/qemu.log" >&2
	echo "--- console (last 40 lines):" >&2
	tail -40 "$run/console.log" >&2
	if [ -f "$share/dmesg.log" ]; then
		echo "--- guest dmesg (last 40 lines):" >&2
		tail -40 "$share/dmesg.log" >&2
	fi
}

if [ $timed_out -eq 1 ]; then
	log "timeout: the VM ran longer than ${timeout_s}s; qemu killed"
	show_logs
	exit $EXIT_TIMEOUT
fi
if [ -s "$share/status" ]; then
	rc=$(cat "$share/status")
	if [ "${GGA_VM_DEBUG:-0}" = 1 ]; then
		log "VM ran ${secs}s (root mounted after $(awk -v a="$start" -v b="${t_booted:-$start}" 'BEGIN {printf "%.1f", (b - a) / 1e9}')s), command exit $rc"
	fi
	exit "$rc"
fi
if [ ! -f "$share/booted" ] && [ "$qrc" -ne 0 ] && [ -s "$run/qemu.log" ]; then
	skip "qemu cannot start here: $(head -3 "$run/qemu.log" | tr '\n' ' ')"
fi
booted=no
[ -f "$share/booted" ] && booted=yes
log "the VM did not finish the command: qemu exit $qrc after ${secs}s, guest booted: $booted"
show_logs
exit $EXIT_VMFAIL
}
