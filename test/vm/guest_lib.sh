# shellcheck shell=bash
# Helpers for commands running inside the test VM (test/vm/vm_run.sh).
# Source it from bash:   source test/vm/guest_lib.sh
#
#   vm_in_guest                  true inside the VM
#   vm_modprobe NAME...          load guest kernel modules (with dependencies)
#   vm_rxe_setup                 dummy0 10.99.0.1/24 + SoftRoCE device rxe0 on it
#   vm_retry SECS CMD...         run CMD until it succeeds, at most SECS seconds
#   vm_wait_tcp_port PORT [ADDR] [SECS]   wait until something listens on ADDR:PORT
#   vm_nvme_ns_of NQN            print /dev/nvmeXnY of the first namespace of
#                                the kernel host's controller connected to NQN
#   vm_nvme_wait_ns NQN [SECS]   like vm_nvme_ns_of, waiting for it to appear
#   vm_path_ana_state PORT       the kernel's ANA state of the path through PORT
#   vm_nvme_disconnect_all       disconnect every kernel NVMe-oF controller
#
# Functions return non-zero (after a message on stderr) on failure; none exits.
# Addresses: RDMA listeners use $VM_RDMA_ADDR (10.99.0.1, on dummy0: rxe on
# `lo` breaks librdmacm); TCP listeners may use 127.0.0.1 or $VM_RDMA_ADDR.

VM_RDMA_ADDR=10.99.0.1
VM_RDMA_NETDEV=dummy0
VM_RXE_DEV=rxe0
VM_KERNEL_TREE=/run/gga-vm/kernel

vm_in_guest() {
	[ -f /run/gga-vm/guest ]
}

# vm_modprobe NAME...: load each module from the guest kernel's tree.
vm_modprobe() {
	local m
	if ! vm_in_guest; then
		echo "vm_modprobe: not inside the test VM" >&2
		return 1
	fi
	for m in "$@"; do
		if ! /sbin/modprobe -d "$VM_KERNEL_TREE" "$m"; then
			echo "vm_modprobe: cannot load kernel module $m" >&2
			return 1
		fi
	done
}

# vm_retry SECS CMD...: run CMD every 0.2 s until it succeeds; fails after SECS.
vm_retry() {
	local secs=$1 end
	shift
	end=$(($(date +%s) + secs))
	while ! "$@"; do
		if [ "$(date +%s)" -ge "$end" ]; then
			return 1
		fi
		sleep 0.2
	done
}

vm_rxe_ready() {
	ibv_devices 2>/dev/null | awk '{print $1}' | grep -qx "$VM_RXE_DEV" &&
		[ -e /dev/infiniband/rdma_cm ] && [ -e /dev/infiniband/uverbs0 ]
}

# vm_rxe_setup: idempotent. Loads the RDMA modules, creates dummy0 with
# 10.99.0.1/24 and the SoftRoCE device rxe0 on it, and waits (bounded) until
# libibverbs lists rxe0.
vm_rxe_setup() {
	# rdma_rxe needs crc32_generic before it (its crc32 lookup is not a
	# module dependency); rdma_ucm and ib_uverbs give user space rdma_cm
	# and verbs.
	vm_modprobe crc32_generic dummy ib_core ib_uverbs rdma_cm rdma_ucm rdma_rxe || {
		echo "vm_rxe_setup: the RDMA kernel modules do not load" >&2
		return 1
	}
	if ! ip link show "$VM_RDMA_NETDEV" >/dev/null 2>&1; then
		ip link add "$VM_RDMA_NETDEV" type dummy || {
			echo "vm_rxe_setup: cannot create $VM_RDMA_NETDEV" >&2
			return 1
		}
	fi
	if ! ip -4 addr show dev "$VM_RDMA_NETDEV" | grep -q "inet $VM_RDMA_ADDR/"; then
		ip addr add "$VM_RDMA_ADDR/24" dev "$VM_RDMA_NETDEV" || return 1
	fi
	ip link set "$VM_RDMA_NETDEV" up || return 1
	if ! rdma link show "$VM_RXE_DEV/1" >/dev/null 2>&1; then
		rdma link add "$VM_RXE_DEV" type rxe netdev "$VM_RDMA_NETDEV" || {
			echo "vm_rxe_setup: rdma link add $VM_RXE_DEV failed" >&2
			return 1
		}
	fi
	if ! vm_retry 10 vm_rxe_ready; then
		echo "vm_rxe_setup: $VM_RXE_DEV did not appear in ibv_devices" >&2
		ibv_devices >&2
		ls -l /dev/infiniband >&2
		return 1
	fi
}

vm_tcp_listening() {
	local port=$1 addr=$2
	ss -Hltn "sport = :$port" 2>/dev/null | awk '{print $4}' |
		grep -q -e "^$addr:$port\$" -e "^\*:$port\$" -e "^0\.0\.0\.0:$port\$"
}

# vm_wait_tcp_port PORT [ADDR] [SECS]: wait until a TCP socket listens there.
vm_wait_tcp_port() {
	local port=$1 addr=${2:-127.0.0.1} secs=${3:-30}
	if ! vm_retry "$secs" vm_tcp_listening "$port" "$addr"; then
		echo "vm_wait_tcp_port: nothing listens on $addr:$port after ${secs}s" >&2
		return 1
	fi
}

# vm_path_ana_state PORT: the kernel's ANA state (sysfs ana_state) of the
# namespace through the controller connected to TCP port PORT; "none" if no
# such path.
vm_path_ana_state() {
	local p c
	for p in /sys/block/nvme*c*n*; do
		[ -e "$p/ana_state" ] || continue
		c=$(readlink -f "$p/device")
		grep -q "trsvcid=$1\b" "$c/address" 2>/dev/null || continue
		cat "$p/ana_state"
		return 0
	done
	echo none
}

# vm_nvme_ns_of NQN: the block device of the first namespace of the (live)
# kernel controller connected to subsystem NQN.
vm_nvme_ns_of() {
	local nqn=$1 c d n live
	# With native multipath (Debian's default) the block devices nvmeSnN
	# hang under /sys/class/nvme-subsystem/nvme-subsysS next to links to
	# its controllers; without it, under the controller itself.
	for c in /sys/class/nvme-subsystem/nvme-subsys* /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] || continue
		[ "$(cat "$c/subsysnqn")" = "$nqn" ] || continue
		live=0
		for d in "$c" "$c"/nvme*; do
			n=$(basename "$d")
			[[ "$n" =~ ^nvme[0-9]+$ ]] || continue
			[ "$(cat "$d/state" 2>/dev/null)" = live ] && live=1
		done
		[ $live -eq 1 ] || continue
		for d in "$c"/nvme*n*; do
			n=$(basename "$d")
			[[ "$n" =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
			[ -e "$d/size" ] && [ "$(cat "$d/size")" != 0 ] || continue
			echo "/dev/$n"
			return 0
		done
	done
	return 1
}

# vm_nvme_wait_ns NQN [SECS]: wait for vm_nvme_ns_of NQN and print it.
vm_nvme_wait_ns() {
	local nqn=$1 secs=${2:-20}
	if ! vm_retry "$secs" vm_nvme_ns_of "$nqn" >/dev/null; then
		echo "vm_nvme_wait_ns: no namespace of $nqn after ${secs}s" >&2
		return 1
	fi
	vm_nvme_ns_of "$nqn"
}

# vm_nvme_disconnect_all: drop every fabrics controller (test clean-up).
vm_nvme_disconnect_all() {
	nvme disconnect-all >/dev/null 2>&1 || true
}
