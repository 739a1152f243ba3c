#!/bin/sh
# Starts WORLD ranks of a command on this machine the way torchrun would,
# with MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and LOCAL_RANK set, and
# waits for them all; exits non-zero if any rank failed.
#
#   examples/launch_ranks.sh WORLD CMD...
#   examples/launch_ranks.sh 2 ddlprof -o run1 --run-id run1 -- python3 examples/pytorch_ddp.py
#
# MASTER_ADDR (default 127.0.0.1) and MASTER_PORT (default 29500) may be set.
set -eu
world=${1:?usage: launch_ranks.sh WORLD CMD...}
shift
export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} MASTER_PORT=${MASTER_PORT:-29500} WORLD_SIZE=$world
pids=""
r=0
while [ "$r" -lt "$world" ]; do
	RANK=$r LOCAL_RANK=$r "$@" &
	pids="$pids $!"
	r=$((r + 1))
done
rc=0
for p in $pids; do
	wait "$p" || rc=1
done
exit $rc
