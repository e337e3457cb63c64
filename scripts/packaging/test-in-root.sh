#!/bin/bash
# The part of scripts/packaging/test-debs.sh that runs in the VM, as root
# in a clean Debian 12 with the packages in /coopmpi-test: install them,
# load the module DKMS built, run unmodified MPI programs through the
# installed coopmpi-run (the driver must carry their large messages), build
# and run a program with libcoopmpi-dev, then purge the packages and look
# for anything left.  "N passed, M failed" at the end; exit status 1 when
# any failed.
set -uo pipefail
cd /coopmpi-test || exit 1
# shellcheck source=tests/ucx/report.sh
. ./report.sh
log=/tmp/test-in-root.log
expect_timeout=900
kver=$(uname -r)
version=$(dpkg-deb -f coopmpi-dkms_*.deb Version)

# the README's command (every dependency is in the root already)
expect "apt install: coopmpi-dkms, libcoopmpi0, libcoopmpi-dev, coopmpi-ucx $version" "$log" \
	apt-get install -y "$PWD"/*.deb
if compgen -G "/lib/modules/$kver/updates/dkms/coopmpi.ko*" >/dev/null; then
	ok "DKMS built coopmpi.ko for the running kernel $kver"
else
	dkms status >"$log" 2>&1
	nok "DKMS built coopmpi.ko for the running kernel $kver" "$log"
fi
expect "modprobe coopmpi" "$log" modprobe coopmpi
if [[ -c /dev/coopmpi && $(modinfo -F version coopmpi) == "$version" ]]; then
	ok "/dev/coopmpi is there; modinfo says version $version"
else
	nok "/dev/coopmpi is there; modinfo says version $version"
fi
coop_info --status >"$log" 2>&1
if grep -q '^provider:   kmod' "$log"; then
	ok "coop_info --status: this process would use the driver"
else
	nok "coop_info --status: this process would use the driver" "$log"
fi

# one 4 MiB size: the emulator is slow.  The driver carries a message by
# its COPY calls (copy_bytes) or through windows, which make no call: the
# ranks' COOP_VERBOSE "copied:" lines count those (report.sh's coop_copied)
np_args=(-p 0 -l 4194304 -u 4194304 -o /tmp/np.out)
before=$(copy_bytes)
expect "mpich: NetPIPE through the installed coopmpi-run" "$log" \
	coopmpi-run -v mpirun.mpich -np 2 -genv COOP_VERBOSE 1 NPmpich2 "${np_args[@]}"
moved=$(coop_copied "$log" "$before")
if ((moved >= 4 << 20)); then ok "mpich: the driver copied its messages ($((moved >> 20)) MiB)"
else nok "mpich: the driver copied its messages (only $moved bytes)" "$log"; fi
before=$(copy_bytes)
expect "openmpi: NetPIPE through the installed coopmpi-run (ob1 + btl uct)" "$log" \
	coopmpi-run -v mpirun.openmpi --allow-run-as-root -np 2 -x COOP_VERBOSE=1 NPopenmpi \
	"${np_args[@]}"
moved=$(coop_copied "$log" "$before")
if ((moved >= 4 << 20)); then ok "openmpi: the driver copied its messages ($((moved >> 20)) MiB)"
else nok "openmpi: the driver copied its messages (only $moved bytes)" "$log"; fi

# the README's permission commands (no udevd here: udevadm test shows
# what the rule would do)
groupadd --system coopmpi
sed 's/^KERNEL.*/KERNEL=="coopmpi", SUBSYSTEM=="misc", GROUP="coopmpi", MODE="0660"/' \
	/lib/udev/rules.d/60-coopmpi.rules >/etc/udev/rules.d/60-coopmpi.rules
udevadm test /sys/class/misc/coopmpi >"$log" 2>&1
gid=$(getent group coopmpi | cut -d: -f3)
if grep -q "Setting permissions /dev/coopmpi, uid=0, gid=$gid, mode=0660" "$log"; then
	ok "the README's udev rule for group coopmpi: group coopmpi, mode 0660"
else
	nok "the README's udev rule for group coopmpi: group coopmpi, mode 0660" "$log"
fi
rm /etc/udev/rules.d/60-coopmpi.rules

read -ra flags <<<"$(pkg-config --cflags --libs coopmpi)"
expect "libcoopmpi-dev: a program builds with pkg-config coopmpi" "$log" \
	cc -O2 hello.c "${flags[@]}" -o /tmp/hello
expect "libcoopmpi-dev: cooprun runs it on the driver" "$log" \
	env COOP_PROVIDER=kmod cooprun -n 2 -t 300 /tmp/hello

expect "rmmod coopmpi" "$log" rmmod coopmpi
expect "apt purge: the four packages go" "$log" \
	apt-get purge -y coopmpi-dkms libcoopmpi0 libcoopmpi-dev coopmpi-ucx
{
	dpkg -l 'coopmpi*' 'libcoopmpi*' 2>/dev/null |
		awk '/^[a-z][a-z] / && $1 != "un" && $1 != "pn"'
	ls -d /usr/src/coopmpi-* /var/lib/dkms/coopmpi \
		/lib/modules/*/updates/dkms/coopmpi.ko* \
		/usr/lib/modules-load.d/coopmpi.conf /usr/bin/coop* 2>/dev/null
} >"$log"
if [[ ! -s $log ]]; then ok "nothing of coopmpi is left"
else nok "nothing of coopmpi is left" "$log"; fi

echo "$pass passed, $fail failed"
((fail == 0))
