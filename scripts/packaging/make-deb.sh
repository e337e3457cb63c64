#!/bin/bash
# scripts/packaging/make-deb.sh [OUTDIR] - build the Debian packages of
# this tree (`make deb`) into OUTDIR (default scripts/packaging/debs):
#   coopmpi-dkms     the module's source for DKMS, modules-load.d, udev rule
#   libcoopmpi0      the library
#   libcoopmpi-dev   headers, coopmpi.pc, libcoopmpi.a, cooprun
#   coopmpi-ucx      the UCX module, Open MPI's btl uct, coopmpi-run,
#                    coop_info; tied to the UCX and Open MPI it was built with
# from a copy of the tracked and new files (the working tree, build products
# left out), then lintian, which must find no error.  The version is
# COOPMPI_VERSION (include/coopmpi_uapi.h); the changelog's date is the last
# commit's.  Needs debhelper, dh-dkms and lintian (scripts/deps.sh), and
# root for the btl's cache (scripts/ompi-btl-uct.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(sed -n 's/^#define COOPMPI_VERSION[[:space:]]*"\(.*\)"/\1/p' include/coopmpi_uapi.h)
out=${1:-scripts/packaging/debs}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$work/coopmpi-$version

mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do
		[[ -e $f && $f != scripts/packaging/debs/* ]] && printf '%s\0' "$f"
	done | xargs -0 cp --parents -t "$src"
cp -r scripts/packaging/debian "$src/debian"
{
	echo "coopmpi ($version) unstable; urgency=medium"
	echo
	echo "  * coopmpi $version, from git $(git rev-parse --short HEAD 2>/dev/null || echo '(no git)')."
	echo
	echo " -- coopmpi developers <coopmpi-devel@lists.example.org>  $(git log -1 --format=%aD 2>/dev/null || date -R)"
} >"$src/debian/changelog"

echo "make-deb: building coopmpi $version in $work" >&2
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
	tail -n 40 "$work/build.log" >&2
	echo "make-deb: dpkg-buildpackage failed" >&2
	exit 1
fi
echo "make-deb: lintian" >&2
lintian --fail-on error "$work"/*.changes >&2 || {
	echo "make-deb: lintian found errors" >&2
	exit 1
}
rm -f "$out"/*.deb
for p in coopmpi-dkms libcoopmpi0 libcoopmpi-dev coopmpi-ucx; do
	mv "$work/${p}_${version}_"*.deb "$out/"
done
ls -1 "$out"/*.deb
