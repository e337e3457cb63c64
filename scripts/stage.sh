# shellcheck shell=bash
# Sourced by scripts/check.sh and the VM test scripts: how a test stage's
# result line looks, so that all of them print it alike.

# stage_line NAME RC START: "==== NAME: ok (Ns) ====" or "FAILED rc=RC",
# N the seconds since START (a $SECONDS value)
stage_line() {
	printf '==== %s: %s (%ds) ====\n' "$1" \
		"$([ "$2" -eq 0 ] && echo ok || echo "FAILED rc=$2")" \
		$((SECONDS - $3))
}
