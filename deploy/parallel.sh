#!/bin/sh
# Runs every unit of an experiment as its own process, JOBS at a time: on this host with
# xargs -P, or on several hosts with GNU parallel when HOSTS is set. The hosts must share the
# --out folder (a network file system mounted at the same path) and have agentr1 on their PATH.
# Give the experiment's flags as arguments, with an absolute --out:
#
#   deploy/parallel.sh --preset paper-mini --quick --out "$PWD/runs/exp"                # JOBS=2
#   HOSTS=node1,node2 JOBS=1 deploy/parallel.sh --preset paper-mini --quick --out /shared/exp
#
# Each unit waits up to WAIT (default 6h) for the SFT base it starts from; running the same
# command again skips finished units. The tables are in <out>/results.md and results.json.
set -eu
AGENTR1=${AGENTR1:-agentr1}
JOBS=${JOBS:-2}
WAIT=${WAIT:-6h}
units=$("$AGENTR1" experiment "$@" --list)
if [ -n "${HOSTS:-}" ]; then
	printf '%s\n' "$units" | parallel --jobs "$JOBS" --sshlogin "$HOSTS" --workdir . \
		"$AGENTR1" experiment "$@" --unit {} --wait "$WAIT"
else
	printf '%s\n' "$units" | xargs -P "$JOBS" -I {} "$AGENTR1" experiment "$@" --unit {} --wait "$WAIT"
fi
