#!/bin/sh
# ddlprof-sim speed: generates a 100,000-job synthetic trace for a
# 2,048-GPU cluster (8 racks x 32 machines x 8 GPUs) and prints, for each
# policy, the median wall time of three runs. Run from the source root
# after `make`; JOBS, CLUSTER and SEED override the defaults.
set -eu
SIM=${SIM:-build/bin/ddlprof-sim}
JOBS=${JOBS:-100000}
CLUSTER=${CLUSTER:-8x32x8}
SEED=${SEED:-1}
[ -x "$SIM" ] || { echo "sim_bench: $SIM not built; run make first" >&2; exit 1; }
dir=$(mktemp -d /tmp/sim_bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$SIM" --generate "$JOBS" --seed "$SEED" --cluster "$CLUSTER" >"$dir/trace.csv"
echo "ddlprof-sim: $JOBS jobs, cluster $CLUSTER, median of 3 runs"
for policy in fifo las gandiva dally sensitivity; do
	for run in 1 2 3; do
		start=$(date +%s.%N)
		"$SIM" --trace "$dir/trace.csv" --cluster "$CLUSTER" --policy "$policy" >/dev/null
		end=$(date +%s.%N)
		awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
	done | sort -n | sed -n 2p | awk -v p="$policy" '{printf "%-12s %.3f s\n", p, $1}'
done
