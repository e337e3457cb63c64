#!/bin/bash
# Install (idempotently) every Debian package the project needs to build,
# test and benchmark coopmpi.  Safe to re-run; does nothing when all packages
# are already installed.  Must run as root (no tty needed).
set -euo pipefail

packages=(
	build-essential pkg-config
	linux-image-amd64 linux-headers-amd64
	qemu-system-x86 busybox-static kmod cpio
	dkms
	libibverbs-dev rdma-core liburing-dev
	check
	gnuplot-nox
	openmpi-bin libopenmpi-dev mpich libmpich-dev ucx-utils
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[[ $status == installed ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
	echo "deps: all ${#packages[@]} packages already installed"
	exit 0
fi

if ((EUID != 0)); then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: must run as root to install them" >&2
	exit 1
fi

echo "deps: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
apt-get update -q
apt-get install "${apt_opts[@]}" "${missing[@]}" </dev/null
echo "deps: done"
