#!/bin/bash
# Print the path of a prepared UCX source tree matching the installed
# libucx0: Debian's source (patches applied, unconfigured) plus coop-config.h,
# Debian's exact config.h from `ucx_info -b`, for building UCX modules out of
# tree.  Prepared on first use in ${COOP_CACHE:-/var/cache/coopmpi}/ucx-<version>
# (outside the repository, by scripts/deb-src.sh); later runs only print the
# path.  Progress goes to stderr, the path is the only line on stdout.  Needs
# dpkg-dev, ucx-utils and a deb-src entry (scripts/deps.sh), and root to write
# the default cache.
set -euo pipefail

die() {
	echo "ucx-src: $*" >&2
	exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
cache=${COOP_CACHE:-/var/cache/coopmpi}
version=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null) ||
	die "libucx0 is not installed (run scripts/deps.sh)"
tree=$cache/ucx-$version

if [[ -f $tree/coop-config.h ]]; then
	echo "$tree"
	exit 0
fi

command -v ucx_info >/dev/null || die "ucx_info missing: install ucx-utils (scripts/deps.sh)"
ucx_version=$(dpkg-query -W -f='${Version}' ucx-utils)
[[ $ucx_version == "$version" ]] ||
	die "ucx-utils $ucx_version differs from libucx0 $version: ucx_info -b would not match"

# Debian's source of libucx0 (source package ucx): $cache/ucx-$version
src=$("$here/deb-src.sh" libucx0) || exit 1
[[ $src == "$tree" && -f $tree/configure.ac ]] ||
	die "scripts/deb-src.sh libucx0 did not give a UCX tree in $tree"
tmp=$(mktemp "$tree/.coop-config.h.XXXXXX")
trap 'rm -f "$tmp"' EXIT
{
	echo "/* Debian's UCX $version build configuration (ucx_info -b), by scripts/ucx-src.sh */"
	ucx_info -b
} >"$tmp"
chmod 644 "$tmp"
mv "$tmp" "$tree/coop-config.h"
echo "ucx-src: prepared $tree" >&2
echo "$tree"
