#!/bin/bash
# tests/install/run.sh - the installed tree, as a user and an MPI
# implementer get it (stage install):
#   1. `make install DESTDIR=D PREFIX=/opt/coopmpi`: every file where it
#      belongs; a program without MPI and an MPI program built with
#      `pkg-config coopmpi` only (PKG_CONFIG_SYSROOT_DIR=D) and run from
#      the installed library, tools and cooprun; `make uninstall` leaves
#      no file behind.
#   2. `make install PREFIX=P DKMSDIR= UDEVDIR=` (a user's own prefix): the
#      installed coopmpi-run runs an unmodified MPI program of each MPI
#      through the installed UCX module (and Open MPI's btl uct), not the
#      build tree's.
# One "ok"/"FAIL" line per check, then "N passed, M failed"; exit status 1
# when any failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
. tests/ucx/report.sh

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
dest=$tmp/root
prefix=/opt/coopmpi
P=$dest$prefix
expect "make install DESTDIR=... PREFIX=$prefix" "$tmp/install" \
	make -s install DESTDIR="$dest" PREFIX="$prefix"
want=("$prefix/lib/libcoopmpi.so.0" "$prefix/lib/libcoopmpi.so"
	"$prefix/lib/libcoopmpi.a" "$prefix/lib/pkgconfig/coopmpi.pc"
	"$prefix/include/coopmpi.h" "$prefix/include/coopmpi_xfer.h"
	"$prefix/include/coopmpi_uapi.h" "$prefix/bin/coop_info"
	"$prefix/bin/coopmpi-run" "$prefix/bin/cooprun"
	"$prefix/lib/coopmpi/ucx/libuct_coop.so"
	"$prefix/lib/coopmpi/openmpi/mca_btl_uct.so"
	"/usr/src/coopmpi-$version/dkms.conf"
	"/usr/src/coopmpi-$version/kmod/main.c"
	"/usr/src/coopmpi-$version/include/coopmpi_uapi.h"
	/lib/udev/rules.d/60-coopmpi.rules)
missing=
for f in "${want[@]}"; do [[ -e $dest$f ]] || missing+=" $f"; done
if [[ -z $missing ]]; then ok "installed: ${#want[@]} files where they belong"
else echo "missing:$missing" >"$tmp/missing"; nok "installed files" "$tmp/missing"; fi

export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$P/lib/pkgconfig
pc_version=$(pkg-config --modversion coopmpi 2>&1)
if [[ $pc_version == "$version" ]] &&
	grep -q "#define COOPMPI_VERSION.*\"$version\"" include/coopmpi_uapi.h; then
	ok "one version: dkms.conf, coopmpi.pc and coopmpi_uapi.h say $version"
else
	nok "one version: dkms.conf $version, coopmpi.pc $pc_version"
fi
read -ra flags <<<"$(pkg-config --cflags --libs coopmpi)"
expect "an MPI-free program builds with pkg-config coopmpi only" "$tmp/cc" \
	cc -O2 -Wall -Werror tests/install/hello.c "${flags[@]}" -o "$tmp/hello"
if grep -q "libcoopmpi.so.0 => not found" < <(ldd "$tmp/hello" 2>/dev/null) &&
	grep -q "$P/lib/libcoopmpi.so.0" < <(LD_LIBRARY_PATH=$P/lib ldd "$tmp/hello"); then
	ok "it links the installed libcoopmpi.so.0"
else
	nok "it links the installed libcoopmpi.so.0"
fi
expect "the installed cooprun runs it (4 MiB between 2 ranks, checked)" "$tmp/hello.out" \
	env LD_LIBRARY_PATH="$P/lib" "$P/bin/cooprun" -n 2 -t 60 "$tmp/hello"
for mpi in mpich openmpi; do
	expect "$mpi: an MPI program builds with mpicc and pkg-config coopmpi" \
		"$tmp/mpicc.$mpi" mpicc.$mpi -O2 -Wall -Werror \
		tests/install/mpi_coop.c "${flags[@]}" -o "$tmp/mpi_coop.$mpi"
done
expect "mpich: it runs on the installed library (coop_init inside MPI)" "$tmp/run.mpich" \
	mpirun.mpich -np 2 -genv LD_LIBRARY_PATH "$P/lib" "$tmp/mpi_coop.mpich"
expect "openmpi: it runs on the installed library (coop_init inside MPI)" "$tmp/run.openmpi" \
	mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 \
	-x LD_LIBRARY_PATH="$P/lib" "$tmp/mpi_coop.openmpi"
expect "installed coop_info --version" "$tmp/ver" "$P/bin/coop_info" --version
has "$tmp/ver" "^libcoopmpi $version \(ABI" "coop_info names the library's version"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH
expect "make uninstall DESTDIR=... PREFIX=$prefix" "$tmp/uninstall" \
	make -s uninstall DESTDIR="$dest" PREFIX="$prefix"
find "$dest" -type f -o -type l >"$tmp/left"
if [[ ! -s $tmp/left ]]; then ok "make uninstall leaves no file"
else nok "make uninstall leaves no file" "$tmp/left"; fi

# 2. a prefix of the user's own: the installed wrapper and plugin
own=$tmp/own
expect "make install PREFIX=<own> DKMSDIR= UDEVDIR=" "$tmp/own.log" \
	make -s install PREFIX="$own" DKMSDIR= UDEVDIR=
if ! mpicc.mpich -O2 tests/ucx/mpi_check.c -o "$tmp/check.mpich" ||
	! mpicc.openmpi -O2 tests/ucx/mpi_check.c -o "$tmp/check.openmpi"; then
	nok "cannot build tests/ucx/mpi_check.c"
fi
# a copy of the wrapper outside both trees must not find the build tree
expect "mpich: an unmodified MPI program through the installed coopmpi-run" \
	"$tmp/own.mpich" "$own/bin/coopmpi-run" -v mpirun.mpich -np 2 \
	-genv UCX_LOG_LEVEL info "$tmp/check.mpich"
has "$tmp/own.mpich" "LD_PRELOAD=$own/lib/coopmpi/ucx/libuct_coop.so" \
	"mpich: the installed UCX module is the one loaded"
has "$tmp/own.mpich" 'ep_cfg\[[0-9]+\]: tag\([^)]*coop/memory' \
	"mpich: the rendezvous went through coop"
expect "openmpi: an unmodified MPI program through the installed coopmpi-run (ob1 + btl uct)" \
	"$tmp/own.ompi" "$own/bin/coopmpi-run" -v mpirun.openmpi --allow-run-as-root \
	--oversubscribe -np 2 "$tmp/check.openmpi"
has "$tmp/own.ompi" "components from $own/lib/coopmpi/openmpi" \
	"openmpi: the installed btl uct is the one used"
rm -rf "$own"

echo "$pass passed, $fail failed"
((fail == 0))
