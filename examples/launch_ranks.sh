#!/bin/sh
# Starts WORLD ranks of a command on this machine the way torchrun would,
# with MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and LOCAL_RANK set, and
# waits for them all; exits non-zero if any rank failed.
#
#   examples/launch_ranks.sh WORLD CMD...
#   examples/launch_ranks.sh 2 ddlprof -o run1 --run-id run1 -- /usr/bin/python3 examples/pytorch_ddp.py
#
# MASTER_ADDR (default 127.0.0.1) and MASTER_PORT (default 29500) may be set.
# Exit status: 0 when every rank exited 0, 1 when any failed, 2 for bad usage.
set -eu
usage() {
	cat <<'USAGE'
usage: launch_ranks.sh WORLD CMD...
Starts WORLD copies of CMD on this machine with MASTER_ADDR (default
127.0.0.1), MASTER_PORT (default 29500), WORLD_SIZE, RANK and LOCAL_RANK
set, as torchrun would, and waits for them all. Exits 0 when every rank
exited 0, 1 when any failed, 2 for bad usage.
  e.g. launch_ranks.sh 2 ddlprof -o run1 --run-id run1 -- /usr/bin/python3 examples/pytorch_ddp.py
USAGE
}
case "${1:-}" in
-h | --help)
	usage
	exit 0
	;;
esac
if [ $# -lt 2 ]; then
	usage >&2
	exit 2
fi
case "$1" in
'' | *[!0-9]*)
	echo "launch_ranks.sh: WORLD must be a number of ranks, not '$1'" >&2
	exit 2
	;;
esac
world=$1
if [ "$world" -lt 1 ]; then
	echo "launch_ranks.sh: WORLD must be at least 1" >&2
	exit 2
fi
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
