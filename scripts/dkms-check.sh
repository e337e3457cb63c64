#!/usr/bin/env bash
# Proves the DKMS recipe: the module's source as `make install-dkms` puts
# it in /usr/src, dkms install for every installed kernel that has
# headers, the built module's modinfo (version, ABI), then removes it all.
# `dkms install coopmpi/VERSION -k KVER` as the README has it (add, build,
# install into /lib/modules/KVER/updates/dkms), then `modprobe coopmpi`
# in the VM, which boots this root.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "dkms-check: needs root (dkms writes /var/lib/dkms)" >&2
	exit 1
fi
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"/\1/p' dkms.conf)
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
src=/usr/src/$name-$version

cleanup() {
	dkms remove "$name/$version" --all >/dev/null 2>&1 || true
	rm -rf "$src"
}
trap cleanup EXIT
cleanup

make -s install-dkms DKMSDIR=/usr/src
abi=$(sed -n 's/^#define COOPMPI_ABI_VERSION[[:space:]]*\([0-9]*\)/\1/p' include/coopmpi_uapi.h)
built=0
for build in /lib/modules/*/build; do
	[ -d "$build" ] || continue
	kver=$(basename "$(dirname "$build")")
	# as the README says it: install adds and builds first
	dkms install "$name/$version" -k "$kver"
	ko=$(find "/lib/modules/$kver/updates/dkms" -name "$name.ko*" | head -n1)
	[ -n "$ko" ] || { echo "dkms-check: no $name.ko for $kver" >&2; exit 1; }
	echo "dkms-check: built $ko"
	info=$(modinfo -F version "$ko"):$(modinfo -F abi "$ko")
	[ "$info" = "$version:$abi" ] || {
		echo "dkms-check: $ko says version:abi $info, not $version:$abi" >&2
		exit 1
	}
	built=$((built + 1))
done
[ "$built" -gt 0 ] || { echo "dkms-check: no kernel headers installed" >&2; exit 1; }
dkms status -m "$name"
# the VM's root is this one: modprobe there loads what DKMS installed
vm_rc=0
out=$(scripts/vm/run -- sh -c 'modprobe coopmpi || exit 1
	modinfo -F filename coopmpi; lib/coop_info --status; rmmod coopmpi' 2>&1) ||
	vm_rc=$?
printf '%s\n' "$out"
if ((vm_rc)) || ! grep -q "/updates/dkms/$name.ko" <<<"$out" ||
	! grep -q '^provider:   kmod' <<<"$out"; then
	echo "dkms-check: modprobe of the DKMS-built module failed in the VM" >&2
	exit 1
fi
echo "dkms-check: modprobe in the VM loaded it; coop_info --status: kmod"
# as the README says it, and nothing may stay behind
dkms remove "$name/$version" --all
if compgen -G "/lib/modules/*/updates/dkms/$name.ko*" >/dev/null; then
	echo "dkms-check: dkms remove left $name.ko behind" >&2
	exit 1
fi
echo "dkms-check: dkms remove took it away again"
