#!/usr/bin/env bash
# Proves the DKMS recipe: dkms add + build of this tree against every
# installed kernel that has headers, then removes it again.
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
	dkms remove -m "$name" -v "$version" --all >/dev/null 2>&1 || true
	rm -rf "$src"
}
trap cleanup EXIT
cleanup

mkdir -p "$src"
cp -a dkms.conf kmod include "$src/"
make -s -C "$src/kmod" clean >/dev/null 2>&1 || true
dkms add -m "$name" -v "$version"
built=0
for build in /lib/modules/*/build; do
	[ -d "$build" ] || continue
	kver=$(basename "$(dirname "$build")")
	dkms build -m "$name" -v "$version" -k "$kver"
	ko=$(find "/var/lib/dkms/$name/$version/$kver" -name "$name.ko*" | head -n1)
	[ -n "$ko" ] || { echo "dkms-check: no $name.ko for $kver" >&2; exit 1; }
	echo "dkms-check: built $ko"
	built=$((built + 1))
done
[ "$built" -gt 0 ] || { echo "dkms-check: no kernel headers installed" >&2; exit 1; }
dkms status -m "$name"
