#!/usr/bin/env bash
# abbench.sh compares one benchmark between two commits on a machine whose speed drifts (a
# shared VM: BENCHMARKS.md, eighth pass), by running the two test binaries alternately, round
# after round, the order swapped every round, and reporting each side's median and range and
# the median and range of the per-round ratio new/old. These are the "interleaved rounds" of
# BENCHMARKS.md.
#
# usage: scripts/abbench.sh [-n ROUNDS] [-t BENCHTIME] OLD NEW PACKAGE BENCH
#   OLD, NEW    commits (anything git rev-parse takes); NEW may be "." for the work tree;
#               either may instead be "cmd:COMMAND", a shell command run from the top of the
#               work tree each round, whose first "ns/op" line is its time (another
#               implementation of the same benchmark, such as scripts/torch_bench.py)
#   PACKAGE     the package directory, e.g. ./model/
#   BENCH       a -bench pattern that selects one benchmark, e.g. 'TrainStep/config=bench-s$'
#   -n ROUNDS   rounds (default 8)
#   -t TIME     -benchtime of each run (default 5x)
#
# examples: scripts/abbench.sh -n 12 bd928b9 . ./model/ 'TrainStep/config=bench-s$'
#   scripts/abbench.sh 'cmd:OPENBLAS_CORETYPE=SkylakeX OPENBLAS_NUM_THREADS=2 /usr/bin/python3
#     scripts/torch_bench.py -n 5 -threads 1 train' . ./model/ 'TrainStep/config=bench-s$'
set -euo pipefail

rounds=8
benchtime=5x
while getopts "n:t:" opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	t) benchtime=$OPTARG ;;
	*) sed -n '2,22p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -ne 4 ]; then
	sed -n '2,22p' "$0" >&2
	exit 2
fi
old=$1 new=$2 pkg=$3 bench=$4

top=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trees=()
cleanup() {
	for t in "${trees[@]}"; do git -C "$top" worktree remove --force "$t" >/dev/null 2>&1 || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# build NAME REV: compiles PACKAGE's test binary at REV into $tmp/NAME.test and records the
# package directory to run it in (benchmarks may read testdata relative to it); for a
# "cmd:COMMAND" side it records the command instead.
build() {
	local name=$1 rev=$2 tree=$top
	if [ "${rev#cmd:}" != "$rev" ]; then
		echo "${rev#cmd:}" >"$tmp/$name.cmd"
		return
	fi
	if [ "$rev" != "." ]; then
		tree=$tmp/$name-tree
		git -C "$top" worktree add --detach "$tree" "$(git -C "$top" rev-parse --verify "$rev^{commit}")" >/dev/null
		trees+=("$tree")
	fi
	(cd "$tree" && go test -c -o "$tmp/$name.test" "$pkg")
	echo "$tree/$pkg" >"$tmp/$name.dir"
}
build old "$old"
build new "$new"

# run NAME: one run of the benchmark, printing its ns/op.
run() {
	local out
	if [ -f "$tmp/$1.cmd" ]; then
		out=$(cd "$top" && bash -c "$(cat "$tmp/$1.cmd")")
	else
		out=$(cd "$(cat "$tmp/$1.dir")" && "$tmp/$1.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime")
	fi
	echo "$out" | awk '/ns\/op/ { for (i = 1; i < NF; i++) if ($(i+1) == "ns/op") { print $i; exit } }'
}

echo "$bench in $pkg, $rounds rounds of -benchtime $benchtime: old $old, new $new"
for r in $(seq "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then
		o=$(run old); n=$(run new)
	else
		n=$(run new); o=$(run old)
	fi
	if [ -z "$o" ] || [ -z "$n" ]; then
		echo "abbench: round $r: no ns/op line (does '$bench' select a benchmark in $pkg?)" >&2
		exit 1
	fi
	echo "round $r: old $o ns/op, new $n ns/op"
	echo "$o $n" >>"$tmp/rounds"
done

# summary: median and range of a column of numbers on stdin.
summary() {
	sort -g | awk '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "median %.4g (%.4g-%.4g)\n", m, v[1], v[NR] }'
}
echo "old, ns/op:       $(awk '{ print $1 }' "$tmp/rounds" | summary)"
echo "new, ns/op:       $(awk '{ print $2 }' "$tmp/rounds" | summary)"
echo "new/old by round: $(awk '{ print $2 / $1 }' "$tmp/rounds" | summary)"
