#!/bin/sh
# ddlprof-sim speed: generates a 100,000-job synthetic trace for a
# 2,048-GPU cluster (8 racks x 32 machines x 8 GPUs), once in our CSV and
# once as a Philly cluster_job_log (ddlprof-sim --generate --format philly:
# the same jobs as JSON records, plus one that never ran before every tenth,
# which the loader leaves out), and prints, for each format and policy, the
# median wall time of RUNS runs (loading the trace included). Run from the
# source root after `make`; JOBS, CLUSTER, SEED and RUNS override the
# defaults, SIM the binary.
set -eu
SIM=${SIM:-build/bin/ddlprof-sim}
JOBS=${JOBS:-100000}
CLUSTER=${CLUSTER:-8x32x8}
SEED=${SEED:-1}
RUNS=${RUNS:-5}
[ -x "$SIM" ] || { echo "sim_bench: $SIM not built; run make first" >&2; exit 1; }
dir=$(mktemp -d /tmp/sim_bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$SIM" --generate "$JOBS" --seed "$SEED" --cluster "$CLUSTER" >"$dir/trace.csv"
"$SIM" --generate "$JOBS" --seed "$SEED" --cluster "$CLUSTER" --format philly >"$dir/trace.json"
echo "ddlprof-sim: $JOBS jobs, cluster $CLUSTER, median of $RUNS runs"
for format in csv philly; do
	trace=$dir/trace.csv
	[ "$format" = philly ] && trace=$dir/trace.json
	for policy in fifo las gandiva dally sensitivity; do
		run=0
		while [ "$run" -lt "$RUNS" ]; do
			start=$(date +%s.%N)
			"$SIM" --trace "$trace" --format "$format" --cluster "$CLUSTER" --policy "$policy" \
				-q >/dev/null 2>&1
			end=$(date +%s.%N)
			awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
			run=$((run + 1))
		done | sort -n | sed -n "$(((RUNS + 1) / 2))p" |
			awk -v f="$format" -v p="$policy" '{printf "%-7s %-12s %.3f s\n", f, p, $1}'
	done
done
