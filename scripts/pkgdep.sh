#!/usr/bin/env bash
# Install the Debian packages gga needs to build and test.
#
# Idempotent: packages already installed are left alone, and apt is not
# touched at all when nothing is missing. Must run as root (or with sudo).
#
#   scripts/pkgdep.sh            build + unit/integration test packages, and
#                                clang-format (scripts/check_format.sh, run by .ci/run)
#   scripts/pkgdep.sh --vm       also the packages of the SoftRoCE VM lane
#   scripts/pkgdep.sh --fuzz     also clang (libFuzzer harnesses)
#   scripts/pkgdep.sh --check    only report what is missing (exit 1 if any)
set -euo pipefail

base=(
	build-essential pkg-config
	libibverbs-dev librdmacm-dev libnl-3-dev
	liblz4-dev libisal-dev libnuma-dev libjansson-dev liburing-dev libssl-dev
	libcunit1-dev libsystemd-dev
	python3
	clang-format
	# The TLS tests' peers: openssl's s_client (nvmf_tls.sh, the connection
	# fuzzer) and nvme-cli's gen-tls-key (nvmf_tls.sh), in the normal lane.
	openssl nvme-cli
)
vm=(qemu-system-x86 busybox-static kmod iproute2 rdma-core ibverbs-providers ibverbs-utils
	rdmacm-utils cpio xz-utils
	# smartctl reads the SMART log of the Linux host's NVMe-oF controller (linux_host_health.sh).
	smartmontools)
# clang alone (without recommends) lacks the libFuzzer and sanitizer runtimes.
fuzz=(clang libclang-rt-14-dev)

want=("${base[@]}")
check=0
for arg in "$@"; do
	case "$arg" in
	--vm) want+=("${vm[@]}") ;;
	--fuzz) want+=("${fuzz[@]}") ;;
	--all) want+=("${vm[@]}" "${fuzz[@]}") ;;
	--check) check=1 ;;
	-h | --help)
		sed -n '2,11p' "$0"
		exit 0
		;;
	*)
		echo "pkgdep: unknown option '$arg'" >&2
		exit 2
		;;
	esac
done

missing=()
for p in "${want[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ $check -eq 1 ]; then
	echo "pkgdep: missing: ${missing[*]}"
	exit 1
fi

echo "pkgdep: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		sudo=(sudo)
	else
		echo "pkgdep: must run as root to install: ${missing[*]}" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet; refresh them when the
# install cannot find a package, not on every run.
if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; then
	"${sudo[@]}" apt-get update -q
	"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
