#!/bin/bash
# Print the path of a prepared UCX source tree matching the installed
# libucx0: Debian's source (patches applied, unconfigured) plus coop-config.h,
# Debian's exact config.h from `ucx_info -b`, for building UCX modules out of
# tree.  Prepared on first use in ${COOP_CACHE:-/var/cache/coopmpi}/ucx-<version>
# (outside the repository); later runs only print the path.  Progress goes to
# stderr, the path is the only line on stdout.  Needs dpkg-dev, ucx-utils and a
# deb-src entry (scripts/deps.sh), and root to write the default cache.
set -euo pipefail

die() {
	echo "ucx-src: $*" >&2
	exit 1
}

cache=${COOP_CACHE:-/var/cache/coopmpi}
version=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null) ||
	die "libucx0 is not installed (run scripts/deps.sh)"
tree=$cache/ucx-$version

if [[ -f $tree/coop-config.h ]]; then
	echo "$tree"
	exit 0
fi

command -v dpkg-source >/dev/null || die "dpkg-source missing: install dpkg-dev (scripts/deps.sh)"
command -v ucx_info >/dev/null || die "ucx_info missing: install ucx-utils (scripts/deps.sh)"
ucx_version=$(dpkg-query -W -f='${Version}' ucx-utils)
[[ $ucx_version == "$version" ]] ||
	die "ucx-utils $ucx_version differs from libucx0 $version: ucx_info -b would not match"
mkdir -p "$cache" || die "cannot create $cache (run as root or set COOP_CACHE)"

# One preparer at a time; under the lock, leftovers of a killed run are ours.
exec 9>"$cache/ucx-$version.lock"
flock 9
if [[ -f $tree/coop-config.h ]]; then
	echo "$tree"
	exit 0
fi
rm -rf "$tree" "$cache/.ucx-$version".tmp.*
tmp=$(mktemp -d "$cache/.ucx-$version.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# A binNMU (+bN) libucx0 comes from the source version without the suffix.
src_pkg=$(dpkg-query -W -f='${source:Package}=${source:Version}' libucx0)
echo "ucx-src: apt-get source $src_pkg into $tree" >&2
# _apt downloads into a directory it can write (else apt warns and runs unsandboxed)
if ((EUID == 0)) && id _apt >/dev/null 2>&1; then
	chown _apt "$tmp"
fi
if ! (cd "$tmp" && apt-get source -q "$src_pkg") >"$tmp/apt.log" 2>&1; then
	cat "$tmp/apt.log" >&2
	die "apt-get source $src_pkg failed; needs a deb-src entry (scripts/deps.sh adds one), dpkg-dev and the network"
fi
dirs=("$tmp"/*/)
[[ ${#dirs[@]} -eq 1 && -f ${dirs[0]}/configure.ac ]] ||
	die "apt-get source $src_pkg did not unpack one UCX tree in $tmp"
{
	echo "/* Debian's UCX $version build configuration (ucx_info -b), by scripts/ucx-src.sh */"
	ucx_info -b
} >"${dirs[0]}/coop-config.h"
mv -T "${dirs[0]}" "$tree"
echo "ucx-src: prepared $tree" >&2
echo "$tree"
