# tests/ucx/report.sh - sourced by the scripts here (from the repository's
# top): one "ok   - what" or "FAIL - what" line per check, counted in
# pass / fail; a failure shows the last report_tail (default 20) lines of
# its log, indented.
pass=0 fail=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
nok() {
	echo "FAIL - $1"
	fail=$((fail + 1))
	[[ -z ${2:-} ]] || sed 's/^/     | /' "$2" | tail -"${report_tail:-20}"
}
