#!/bin/bash
# deb-src.sh PACKAGE - print the path of the Debian source tree (patches
# applied, unconfigured) that the installed binary package PACKAGE was built
# from.  Fetched on first use with `apt-get source` into
# ${COOP_CACHE:-/var/cache/coopmpi}/<source>-<installed version> (outside the
# repository; prepared in a temporary directory and renamed into place, so an
# existing tree is complete); later runs only print the path.  Progress goes
# to stderr, the path is the only line on stdout.  Needs dpkg-dev, a deb-src
# entry (scripts/deps.sh adds one), the network the first time, and root to
# write the default cache.
#   scripts/deb-src.sh libmpich-dev     -> /var/cache/coopmpi/mpich-4.0.2-3+b1
set -euo pipefail

die() {
	echo "deb-src: $*" >&2
	exit 1
}

(($# == 1)) || die "usage: deb-src.sh PACKAGE (an installed binary package)"
pkg=$1
cache=${COOP_CACHE:-/var/cache/coopmpi}
version=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) || version=
[[ -n $version ]] || die "$pkg is not installed (run scripts/deps.sh)"
src_name=$(dpkg-query -W -f='${source:Package}' "$pkg")
name=$src_name-$version
tree=$cache/$name

if [[ -d $tree ]]; then
	echo "$tree"
	exit 0
fi

command -v dpkg-source >/dev/null || die "dpkg-source missing: install dpkg-dev (scripts/deps.sh)"
mkdir -p "$cache" || die "cannot create $cache (run as root or set COOP_CACHE)"

# One preparer at a time; under the lock, leftovers of a killed run are ours.
exec 9>"$cache/$name.lock"
flock 9
if [[ -d $tree ]]; then
	echo "$tree"
	exit 0
fi
rm -rf "$cache/.$name".tmp.*
tmp=$(mktemp -d "$cache/.$name.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# A binNMU (+bN) binary comes from the source version without the suffix.
src_pkg=$src_name=$(dpkg-query -W -f='${source:Version}' "$pkg")
echo "deb-src: apt-get source $src_pkg into $tree" >&2
# _apt downloads into a directory it can write (else apt warns and runs unsandboxed)
if ((EUID == 0)) && id _apt >/dev/null 2>&1; then
	chown _apt "$tmp"
fi
if ! (cd "$tmp" && apt-get source -q "$src_pkg") >"$tmp/apt.log" 2>&1; then
	cat "$tmp/apt.log" >&2
	die "apt-get source $src_pkg failed; needs a deb-src entry (scripts/deps.sh adds one), dpkg-dev and the network"
fi
dirs=("$tmp"/*/)
[[ ${#dirs[@]} -eq 1 && -d ${dirs[0]} ]] ||
	die "apt-get source $src_pkg did not unpack one tree in $tmp"
mv -T "${dirs[0]}" "$tree"
echo "deb-src: prepared $tree" >&2
echo "$tree"
