#!/bin/bash
# scripts/packaging/test-debs.sh - the Debian packages as an administrator
# meets them (stage packages-vm): `make deb`, then a clean Debian 12 root
# (mmdebstrap from the package registry: what the packages need and the
# VM's kernel headers, no coopmpi; cached in ${COOP_CACHE:-/var/cache/
# coopmpi}/debroot-*.tar, keyed by its package list) booted in the VM
# (scripts/vm/run --root), where scripts/packaging/test-in-root.sh
# installs the packages (DKMS builds the module for the VM's kernel),
# loads the module, runs unmodified MPI programs through the installed
# wrapper and files only, and purges the packages again.
# Output: one "ok"/"FAIL" line per check, then "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
cache=${COOP_CACHE:-/var/cache/coopmpi}
die() {
	echo "test-debs: $*" >&2
	exit 1
}

# the kernel scripts/vm/run boots: the newest with an image and headers
kver=${COOP_VM_KERNEL:-}
if [[ -z $kver ]]; then
	for b in /lib/modules/*/build; do
		k=$(basename "$(dirname "$b")")
		[[ -e /boot/vmlinuz-$k ]] && echo "$k"
	done | sort -V | tail -n 1 >"${TMPDIR:-/tmp}/test-debs.kver.$$"
	kver=$(cat "${TMPDIR:-/tmp}/test-debs.kver.$$")
	rm -f "${TMPDIR:-/tmp}/test-debs.kver.$$"
fi
[[ -n $kver ]] || die "no kernel with /boot/vmlinuz and headers"

# what the packages need at run time, a compiler for DKMS, the MPIs and
# their NetPIPE programs (unmodified MPI programs), a -dev user's tools,
# and udev for the README's permission commands
pkgs=(dkms build-essential "linux-headers-$kver" kmod procps udev
	mpich openmpi-bin libucx0 liburing2 libibverbs1
	liburing-dev libibverbs-dev pkgconf netpipe-mpich2 netpipe-openmpi)
key=$(printf '%s\n' bookworm "${pkgs[@]}" | sha256sum | cut -c1-12)
tarball=$cache/debroot-bookworm-$key.tar
if [[ ! -s $tarball ]]; then
	sources=/etc/apt/sources.list.d/debian.sources
	[[ -f $sources ]] || sources=/etc/apt/sources.list
	mkdir -p "$cache"
	part=$cache/.debroot-$$.tar
	echo "test-debs: making a Debian 12 root ($tarball)" >&2
	mmdebstrap --variant=apt --include="$(IFS=,; echo "${pkgs[*]}")" \
		bookworm "$part" "$sources" >"$cache/.debroot-$$.log" 2>&1 || {
		tail -n 30 "$cache/.debroot-$$.log" >&2
		rm -f "$part"
		die "mmdebstrap failed"
	}
	mv "$part" "$tarball"
	rm -f "$cache/.debroot-$$.log"
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
scripts/packaging/make-deb.sh "$tmp/debs" >/dev/null || die "make deb failed"
root=$tmp/root
mkdir "$root"
tar -xf "$tarball" -C "$root" || die "cannot unpack $tarball"
# MPICH's launcher looks its host name up
echo "127.0.1.1 coopvm" >>"$root/etc/hosts"
t=$root/coopmpi-test
mkdir "$t"
cp "$tmp"/debs/*.deb scripts/packaging/test-in-root.sh tests/ucx/report.sh \
	tests/install/hello.c tests/install/exchange.h "$t/"
COOP_VM_KERNEL=$kver COOP_VM_TIMEOUT=${COOP_VM_TIMEOUT:-2400} \
	scripts/vm/run --mem 3G --root "$root" -- bash /coopmpi-test/test-in-root.sh
