#!/bin/sh
# What ddlprof and its Python hook add to a PyTorch training step: a DDP job
# of 2 ranks on this host (gloo, an MLP whose step takes about 20-30 ms, a
# DataLoader without workers; tests/py/train.py), run RUNS times without and
# RUNS times with ddlprof, alternating; each run's median step (steps 6 on,
# as the job measures it, rank 0: a step now and then loses the CPU to the
# other rank on two cores), the median of each side, and the ratio.
# Then the hook's import cost under python -X importtime, and how long it
# takes to arm itself once torch is imported. Figures, not pass/fail.
#   bench/torch_step.sh        B names the build folder (default build)
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
RUNS=${RUNS:-9}
STEPS=${STEPS:-60}
PY=${PY:-/usr/bin/python3}
if ! $PY -c "import torch.distributed" 2>/dev/null; then
	echo "-- PyTorch step: no python3-torch here (skipped)"
	exit 0
fi
T=$(mktemp -d /tmp/ddltorch.XXXXXX)
trap 'rm -rf "$T"' EXIT
med() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
port=29700
step() { # the median step of rank 0 (steps 6 on) in the job's JSON line, ms
	$PY -c 'import json,sys; j=json.load(open(sys.argv[1])); s=sorted(j["step_s"][5:]); print("%.3f" % (1e3*s[len(s)//2]))' "$1"
}
# Each rank on a core of its own where taskset is there: two ranks sharing
# two cores make the steps of one run vary more than anything measured here.
pin() { command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ] && echo "taskset -c $1"; }
run() { # WITH: 0 or 1; writes the run's step into $T/steps.WITH
	port=$((port + 1))
	pre=""
	[ "$1" = 1 ] && pre="$B/bin/ddlprof -q -o $T/tr$port --"
	for r in 1 0; do
		MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=$r $(pin $r) $pre $PY tests/py/train.py \
			--model mlp --width 256 --loader memory --workers 0 --steps "$STEPS" --out "$T/o$port" \
			>/dev/null &
	done
	wait
	step "$T/o$port.0" >>"$T/steps.$1"
	if [ "$1" = 1 ]; then # events the ranks recorded, per step
		$B/bin/ddlprof-report --json "$T/tr$port" | $PY -c 'import json,sys; d=json.load(sys.stdin)
print(sum(p["events"] for p in d["processes"] if p["role"] == "rank") / 2 / int(sys.argv[1]))' "$STEPS" \
			>>"$T/events"
	fi
	rm -rf "$T/tr$port"
}
echo "-- a PyTorch DDP step (2 ranks, gloo, MLP 4 x 256, batch 32, an in-process DataLoader; $STEPS steps,"
echo "   median of steps 6 on as the job measures it; $RUNS runs each way, alternating)"
for i in $(seq "$RUNS"); do
	run 0
	run 1
done
a=$(med <"$T/steps.0")
b=$(med <"$T/steps.1")
echo "   without: $a ms   with ddlprof: $b ms   ratio: $(echo "$b $a" | awk '{printf "%.4f", $1/$2}')"
pairs=$(paste "$T/steps.0" "$T/steps.1" | awk '{print $2 / $1}' | med)
echo "   median of the $RUNS ratios of a run with to the run without just before it: $pairs"
echo "   each run without: $(tr '\n' ' ' <"$T/steps.0")"
echo "   each run with:    $(tr '\n' ' ' <"$T/steps.1")"
echo "   events a rank recorded per step: $(med <"$T/events") (gloo's loop, sockets, waits, the hook's phases)"
echo "-- a call through one of the hook's wrappers (a C callable; it records a phase each call)"
$B/bin/ddlprof -q -o "$T/trwrap" -- $PY -c '
import sys, time
import torch
h = sys.modules.get("ddlprof_hook")
def f(x):
    return x
w = h.wrap(f, h.PHASE_DATA_WAIT, method=False)
def loop(g, n):
    t = time.perf_counter()
    for i in range(n):
        g(i)
    return time.perf_counter() - t
res = []
for r in range(12):
    a, b = loop(f, 20000), loop(w, 20000)
    res.append((b - a) / 20000 * 1e9)
    time.sleep(0.12)  # the writer drains the ring between rounds
res.sort()
print("   added per call: %.0f ns (median of 12 rounds of 20000; the bare Python call %.0f ns)"
      % (res[6], a / 20000 * 1e9))'

echo "-- the hook's import cost (python -X importtime -c 'import torch', median of $RUNS; microseconds)"
for i in $(seq "$RUNS"); do
	$B/bin/ddlprof -q -o "$T/trimp" -- $PY -X importtime -c "import torch" 2>&1 >/dev/null |
		awk -F'|' '/ sitecustomize$/ && !s {s=$2} / ddlprof_hook$/ {h+=$2} / ddlprof_hook\./ {h+=$2}
			END {print s+0, h+0}'
done >"$T/imp"
echo "   sitecustomize (with the user's own it runs): $(awk '{print $1}' "$T/imp" | med) us" \
	" the hook's modules, once torch is imported: $(awk '{print $2}' "$T/imp" | med) us"
for i in $(seq "$RUNS"); do
	$B/bin/ddlprof -q -o "$T/trarm$i" -- $PY -c "import torch"
	$B/bin/ddlprof-report --json "$T/trarm$i" | $PY -c 'import json, sys
print(json.load(sys.stdin)["job"]["python_hook"].split("armed in ")[1].split()[0])'
	rm -rf "$T/trarm$i"
done >"$T/arm"
echo "   arming the hook once torch is imported (its modules and its patches; median of $RUNS): $(med <"$T/arm") ms"
