#!/bin/sh
# A Slurm job array with one task per unit of an experiment. The nodes must share the --out
# folder (a network file system) and have agentr1 on their PATH. Submit from that folder's
# host with the experiment's flags, the array as large as the plan:
#
#   FLAGS="--preset paper-mini --quick --out /shared/runs/exp"
#   sbatch --array=0-$(($(agentr1 experiment $FLAGS --list | wc -l) - 1)) deploy/slurm.sh $FLAGS
#
# Task i runs line i+1 of --list (the SFT bases come first); a unit waits for its SFT base up
# to --wait. A task preempted or killed leaves a claim that the task run again takes over once
# stale (--stale-after, 10 minutes); `sbatch --array=I deploy/slurm.sh $FLAGS` reruns task I.
#SBATCH --job-name=agentr1-experiment
#SBATCH --cpus-per-task=2
#SBATCH --time=04:00:00
set -eu
unit=$(agentr1 experiment "$@" --list | sed -n "$((SLURM_ARRAY_TASK_ID + 1))p")
[ -n "$unit" ] || { echo "no unit $SLURM_ARRAY_TASK_ID in the plan" >&2; exit 1; }
exec agentr1 experiment "$@" --unit "$unit" --wait 3h
