#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the module, one after another, for a set time each, and
# prints one line per target: package, target, time, executions, result. See FUZZING.md.
#
#   scripts/fuzz.sh                      # every target, 30 s each
#   FUZZTIME=2m scripts/fuzz.sh          # longer
#   scripts/fuzz.sh ./env/... ./model    # only these packages
#
# Environment:
#   FUZZTIME      time per target (go test -fuzztime), default 30s
#   FUZZPARALLEL  fuzzing workers per target (go test -parallel), default 1: the machine is shared
#   FUZZMINIMIZE  time spent minimising each new input (go test -fuzzminimizetime), default 5s
#   FUZZLOG       folder for the per-target logs, default a new folder under ${TMPDIR:-/tmp}
#
# A failing input is written by go test to <package>/testdata/fuzz/<Target>/<hash>; the log
# names it and `go test -run '<Target>/<hash>' <package>` replays it. The script exits 1 if any
# target failed. A run that go test fails with "context deadline exceeded" at the end of its
# time, writing no input, is Go's own race (go.dev/issue/75804) and counts as nothing found.
set -u -o pipefail

cd "$(dirname "$0")/.." || exit 2
fuzztime=${FUZZTIME:-30s}
parallel=${FUZZPARALLEL:-1}
minimize=${FUZZMINIMIZE:-5s}
logdir=${FUZZLOG:-$(mktemp -d "${TMPDIR:-/tmp}/agentr1-fuzz.XXXXXX")}
mkdir -p "$logdir" || exit 2
patterns=("$@")
[ ${#patterns[@]} -eq 0 ] && patterns=(./...)

# Packages whose tests declare a fuzz target; go test -list then names the targets.
mapfile -t pkgs < <(go list -f '{{.ImportPath}} {{.Dir}}' "${patterns[@]}" |
	while read -r pkg dir; do
		if grep -qs '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' "$dir"/*_test.go; then echo "$pkg"; fi
	done)
if [ ${#pkgs[@]} -eq 0 ]; then
	echo "fuzz.sh: no fuzz targets in ${patterns[*]}" >&2
	exit 2
fi

echo "fuzz.sh: ${fuzztime} per target, ${parallel} worker(s), logs in ${logdir}"
printf '%-22s %-22s %8s %12s  %s\n' package target time execs result
failed=0
for pkg in "${pkgs[@]}"; do
	if ! targets=$(go test -list '^Fuzz' "$pkg" | grep '^Fuzz'); then
		echo "fuzz.sh: listing the targets of $pkg failed" >&2
		failed=1
		continue
	fi
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $targets; do
		log="$logdir/$(echo "$pkg" | tr '/' '_').$target.log"
		inputs="$dir/testdata/fuzz/$target"
		before=$(ls "$inputs" 2>/dev/null | wc -l)
		start=$(date +%s)
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" \
			-parallel "$parallel" "$pkg" >"$log" 2>&1
		status=$?
		secs=$(($(date +%s) - start))
		execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
		after=$(ls "$inputs" 2>/dev/null | wc -l)
		if [ $status -eq 0 ]; then
			result="ok: nothing found"
		elif [ "$after" -eq "$before" ] && tail -6 "$log" | grep -q '^    context deadline exceeded$'; then
			# Go's fuzzing coordinator can report its own -fuzztime deadline as a failure
			# (go.dev/issue/75804, fixed in Go 1.27): no input failed and none was written.
			result="ok: nothing found (the run ended on go.dev/issue/75804, not on an input)"
		else
			failed=1
			input=$(grep -o 'testdata/fuzz/[^ ]*' "$log" | head -1)
			result="FAILED: ${input:-see $log}"
		fi
		printf '%-22s %-22s %7ss %12s  %s\n' "${pkg#agentr1/}" "$target" "$secs" "${execs:-?}" "$result"
	done
done
exit $failed
