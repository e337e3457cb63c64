#!/bin/bash
# Print the directory of Open MPI components that scripts/coopmpi-run puts
# first in Open MPI's component path for its default path through coop:
#   mca_btl_uct.so  Open MPI's own UCT BTL (opal/mca/btl/uct, which Debian
#                   does not build), through which ob1 reads rendezvous
#                   messages with coop's get_zcopy
#   mca_pml_ob1.so  ob1 rebuilt with one fix for an RDMA-only btl (it stands
#                   in for Debian's)
# both compiled out of tree for the installed Open MPI (libopenmpi-dev) and
# UCX (libucx-dev) from Debian's source, with the patches and config header
# of lib/ucx/ompi-btl-uct/ (its README says what each does and why).
#
# Prepared on first use in ${COOP_CACHE:-/var/cache/coopmpi}/
# ompi-btl-uct-<Open MPI version>-<key> (outside the repository; built in a
# temporary directory under a lock and renamed into place, so an existing
# directory is complete); later runs only print the path.  The key is a
# hash of the patches, the header, the compiler command and the UCX
# version: a change to any of them builds a new directory.  The source is
# Debian's (scripts/deb-src.sh libopenmpi-dev, cached too).  Progress goes
# to stderr, the path is the only line on stdout.  Needs gcc, patch,
# libopenmpi-dev, libucx-dev, dpkg-dev and a deb-src entry
# (scripts/deps.sh), and root to write the default cache.
#   scripts/ompi-btl-uct.sh   -> /var/cache/coopmpi/ompi-btl-uct-4.1.4-3+b1-<key>
set -euo pipefail

die() {
	echo "ompi-btl-uct: $*" >&2
	exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
inputs=$(cd "$here/../lib/ucx/ompi-btl-uct" && pwd)
# component directory in the source, its patches in order, library name
btl_dir=opal/mca/btl/uct
btl_patches=(btl_uct_ucx110.patch btl_uct_am_bcopy.patch btl_uct_idle_progress.patch
	btl_uct_node_local.patch)
pml_dir=ompi/mca/pml/ob1
pml_patches=(pml_ob1_ack_eager.patch pml_ob1_rget_truncate.patch
	pml_ob1_use_all_rdma_min.patch pml_ob1_fin_eager.patch
	pml_ob1_use_all_rdma_busy.patch pml_ob1_rget_busy_reader.patch)
header=btl_uct_oot_config.h
cache=${COOP_CACHE:-/var/cache/coopmpi}

ompi_version=$(dpkg-query -W -f='${Version}' libopenmpi-dev 2>/dev/null) || ompi_version=
[[ -n $ompi_version ]] || die "libopenmpi-dev is not installed (run scripts/deps.sh)"
ucx_version=$(dpkg-query -W -f='${Version}' libucx-dev 2>/dev/null) || ucx_version=
[[ -n $ucx_version ]] || die "libucx-dev is not installed (run scripts/deps.sh)"
ompi_lib=/usr/lib/x86_64-linux-gnu/openmpi/lib
command -v mpicc.openmpi >/dev/null && ompi_lib=$(mpicc.openmpi --showme:libdirs)
ompi_inc=${ompi_lib%/lib}/include
# Debian's own build flags (ompi_info: Build CFLAGS, CPPFLAGS)
cflags=(-DNDEBUG -g -O3 -finline-functions -fno-strict-aliasing -mcx16
	-fstack-protector-strong -D_FORTIFY_SOURCE=2 -Wall -Wno-unused
	-Werror=incompatible-pointer-types -Werror=implicit-function-declaration
	-fPIC -shared)
libs=(-L"$ompi_lib" -lmpi -lopen-pal)
btl_libs=(-luct -lucs -lucm)

key=$({
	(cd "$inputs" && cat "${btl_patches[@]}" "${pml_patches[@]}" "$header")
	echo "${cflags[*]} ${libs[*]} ${btl_libs[*]} libucx-dev $ucx_version"
} | sha1sum | cut -c1-12)
name=ompi-btl-uct-$ompi_version-$key
out=$cache/$name

if [[ -f $out/mca_btl_uct.so && -f $out/mca_pml_ob1.so ]]; then
	echo "$out"
	exit 0
fi

# a read-only cache (the VM's view of the host): nothing to build with
[[ -d $cache ]] || mkdir -p "$cache" 2>/dev/null ||
	die "$out not built, cannot create $cache (run as root or set COOP_CACHE)"
[[ -w $cache ]] ||
	die "$out not built and $cache is not writable (read-only in the VM: run scripts/ompi-btl-uct.sh natively, as root, first)"
for c in gcc patch nm ompi_info; do
	command -v $c >/dev/null || die "$c missing (scripts/deps.sh)"
done
[[ -f $ompi_inc/openmpi/opal/mca/btl/btl.h && -f $ompi_inc/openmpi/ompi/mca/bml/bml.h ]] ||
	die "Open MPI's internal headers missing in $ompi_inc/openmpi (libopenmpi-dev)"
[[ -f /usr/include/uct/api/uct.h ]] || die "UCX headers missing (libucx-dev)"

# Debian's source of libopenmpi-dev (source package openmpi), cached
src=$("$here/deb-src.sh" libopenmpi-dev) || exit 1
[[ -d $src/$btl_dir && -d $src/$pml_dir ]] || die "no $btl_dir or $pml_dir in $src"

# One builder at a time; under the lock, leftovers of a killed run are ours.
exec 9>"$cache/$name.lock"
flock 9
if [[ -f $out/mca_btl_uct.so && -f $out/mca_pml_ob1.so ]]; then
	echo "$out"
	exit 0
fi
rm -rf "$cache/.$name".tmp.*
tmp=$(mktemp -d "$cache/.$name.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/out"

# build LIB SRC_DIR EXTRA_LIBS -- PATCH... : $tmp/out/LIB from SRC_DIR's .c
# files (not CUDA's: Debian's Open MPI has no CUDA support).  Installed
# headers first; the few that libopenmpi-dev lacks (ompi/peruse/peruse.h,
# opal/mca/timer/linux/timer_linux.h) come from the same source.
build() {
	local lib=$1 dir=$2 extra=$3 work=$tmp/${1%.so} p c srcs=()
	shift 4
	cp -r "$src/$dir" "$work"
	for c in "$work"/*.c; do
		[[ ${c##*/} == *cuda* ]] || srcs+=("${c##*/}")
	done
	for p in "$@"; do
		patch -d "$work" -p1 --quiet --no-backup-if-mismatch <"$inputs/$p" \
			>"$tmp/patch.log" 2>&1 || {
			cat "$tmp/patch.log" >&2
			die "$p does not apply to $src/$dir (Open MPI $ompi_version)"
		}
	done
	# (the build directory is "." in the debug info: the same bytes on a rebuild)
	# shellcheck disable=SC2086 # extra: library words
	if ! (cd "$work" && gcc "${cflags[@]}" -ffile-prefix-map="$tmp"=. \
		-include "$inputs/$header" -I"$ompi_inc/openmpi" -I"$ompi_inc" -I. \
		-I"$src" "${srcs[@]}" "${libs[@]}" $extra \
		-o "$tmp/out/$lib") >"$tmp/build.log" 2>&1; then
		tail -30 "$tmp/build.log" >&2
		die "compiling $dir failed"
	fi
	grep -q " ${lib%.so}_component\$" < <(nm -D --defined-only "$tmp/out/$lib") ||
		die "$lib does not define ${lib%.so}_component"
}
echo "ompi-btl-uct: building mca_btl_uct.so and mca_pml_ob1.so (Open MPI $ompi_version, UCX $ucx_version) in $out" >&2
build mca_btl_uct.so "$btl_dir" "${btl_libs[*]}" -- "${btl_patches[@]}"
build mca_pml_ob1.so "$pml_dir" "" -- "${pml_patches[@]}"

# Open MPI loads both from this directory: ompi_info lists them from there
OMPI_MCA_mca_base_component_path=$tmp/out:SYSTEM_DEFAULT \
	ompi_info --parsable --all >"$tmp/info" 2>&1 || true
if ! grep -q '^mca:btl:uct:' "$tmp/info" || ! grep -q '^mca:pml:ob1:' "$tmp/info"; then
	tail -20 "$tmp/info" >&2
	die "ompi_info does not list the built btl uct and pml ob1"
fi
{
	echo "Open MPI $ompi_version from $src, UCX: libucx-dev $ucx_version"
	echo "key $key (scripts/ompi-btl-uct.sh, lib/ucx/ompi-btl-uct/)"
	echo "mca_btl_uct.so: $btl_dir + ${btl_patches[*]}"
	echo "mca_pml_ob1.so: $pml_dir + ${pml_patches[*]}"
	echo "gcc ${cflags[*]} -include $header ... ${libs[*]} [${btl_libs[*]}]"
} >"$tmp/out/BUILD-INFO"
chmod 755 "$tmp/out"
mv -T "$tmp/out" "$out"
echo "ompi-btl-uct: prepared $out" >&2
echo "$out"
