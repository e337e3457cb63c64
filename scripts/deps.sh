#!/bin/bash
# Install (idempotently) every Debian package the project needs to build,
# test and benchmark coopmpi.  Safe to re-run; does nothing when all packages
# are already installed.  Must run as root (no tty needed).
set -euo pipefail

packages=(
	build-essential pkg-config
	linux-image-amd64 linux-headers-amd64
	linux-source-6.1 flex bison bc libelf-dev libssl-dev xz-utils
	qemu-system-x86 busybox-static kmod cpio
	dkms
	libibverbs-dev rdma-core liburing-dev libfuse3-dev
	check clang-tools
	gnuplot-nox
	openmpi-bin libopenmpi-dev mpich libmpich-dev ucx-utils libucx-dev
	dpkg-dev patch libtool autoconf automake g++
	debhelper dh-dkms lintian mmdebstrap
	slurm-wlm munge
	netpipe-mpich2 netpipe-openmpi python3-mpi4py
)

# scripts/ucx-src.sh and scripts/ompi-btl-uct.sh run `apt-get source` (ucx,
# openmpi: scripts/deb-src.sh), which needs deb-src entries.
# When none is enabled, add our own for the URIs and suites of Debian's
# deb entries (deb822 debian.sources, or one-line sources.list).
src_file=/etc/apt/sources.list.d/coopmpi-src.sources

have_deb_src() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] && grep -qE '^[[:space:]]*deb-src[[:space:]]' "$f" && return 0
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] && grep -qE '^Types:(.*[[:space:]])?deb-src([[:space:]]|$)' "$f" && return 0
	done
	return 1
}

# deb-src stanzas (deb822) for every enabled deb entry of Debian's own lists
deb_src_stanzas() {
	if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
		awk -v RS= '
			!/(^|\n)Types:[^\n]*[[:space:]]deb([[:space:]]|$)/ { next }
			/(^|\n)Enabled:[[:space:]]*no/ { next }
			{
				print "Types: deb-src"
				n = split($0, line, "\n")
				for (i = 1; i <= n; i++)
					if (line[i] !~ /^(#|Types:)/) print line[i]
				print ""
			}' /etc/apt/sources.list.d/debian.sources
	fi
	if [[ -f /etc/apt/sources.list ]]; then
		awk '
			$1 != "deb" { next }
			{
				signed = ""; i = 2
				if ($2 ~ /^\[/) {
					for (; i <= NF; i++) {
						o = $i; gsub(/[][]/, "", o)
						if (o ~ /^signed-by=/) signed = substr(o, 11)
						if ($i ~ /\]$/) break
					}
					i++
				}
				comps = ""
				for (j = i + 2; j <= NF; j++) comps = comps " " $j
				print "Types: deb-src"
				print "URIs: " $i
				print "Suites: " $(i + 1)
				if (comps != "") print "Components:" comps
				if (signed != "") print "Signed-By: " signed
				print ""
			}' /etc/apt/sources.list
	fi
}

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[[ $status == installed ]] || missing+=("$p")
done

need_src=0
have_deb_src || need_src=1

if ((${#missing[@]} == 0 && need_src == 0)); then
	echo "deps: all ${#packages[@]} packages already installed"
	exit 0
fi

if ((EUID != 0)); then
	if ((${#missing[@]} == 0)); then
		# only apt-get source (scripts/deb-src.sh) needs it: not an error here
		echo "deps: all ${#packages[@]} packages installed; no deb-src entry (run as root to add one)" >&2
		exit 0
	fi
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: must run as root to install them" >&2
	exit 1
fi

if ((need_src)); then
	stanzas=$(deb_src_stanzas)
	if [[ -z $stanzas ]]; then
		echo "deps: no Debian deb entry found to derive deb-src from" >&2
		exit 1
	fi
	printf '# Added by coopmpi scripts/deps.sh (apt-get source)\n%s\n' "$stanzas" >"$src_file.tmp"
	mv "$src_file.tmp" "$src_file"
	echo "deps: added deb-src entries: $src_file"
fi

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
apt-get update -q
if ((${#missing[@]})); then
	echo "deps: installing: ${missing[*]}"
	apt-get install "${apt_opts[@]}" "${missing[@]}" </dev/null
fi
echo "deps: done"
