#!/bin/sh
# The real-GPU check (DESIGN.md section 9): on a machine with an NVIDIA GPU,
# build everything, then run in one go every check that needs the device,
# printing what ddlprof captured and what it cost. Device time is scarce:
# this script is tested on the CPU path first (it says what it skips), and
# takes a few minutes at most.
#
#   scripts/device-check.sh [OUT]     figures and traces go to OUT (default $OUT or /tmp/ddl-device)
set -u
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-/tmp/ddl-device}}
mkdir -p "$OUT"
B=build
say() { printf '== %s\n' "$*"; }
t0=$(date +%s)

say "machine"
nproc; uname -r
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
	nvidia-smi topo -m 2>/dev/null | head -12
	GPU=1
else
	echo "no nvidia-smi: no GPU here; the GPU runs below are skipped"
	GPU=0
fi

say "build (make -j, nvcc: $(command -v nvcc || echo /usr/local/cuda/bin/nvcc))"
if ! make -j"$(nproc)" all "$B/bench/launch" "$B/bench/libfakecudart.so" >"$OUT/build.log" 2>&1; then
	tail -30 "$OUT/build.log"
	echo "BUILD FAILED"
	exit 1
fi
ls -la $B/examples/ddlsynth* $B/lib/
ndev=0
[ "$GPU" = 1 ] && ndev=$(nvidia-smi -L | wc -l)
echo "devices: $ndev"

say "wrapper cost per kernel launch (no-op runtime; medians of 5 processes)"
for i in 1 2 3 4 5; do
	DDLPROF_DIR="$OUT/launch$i" LD_PRELOAD=$B/lib/libddlprof.so DDLPROF_BUFFER_EVENTS=1048576 \
		$B/bench/launch $B/bench/libfakecudart.so 200000 9
done | sort -t' ' -k6 -g | sed -n 3p

if [ "$GPU" = 1 ] && [ -x $B/examples/ddlsynth-gpu ]; then
	n=$ndev
	[ "$n" -gt 8 ] && n=8
	[ "$n" -lt 1 ] && n=1
	ARGS="--ranks $n --ranks-per-host $n --layers 8 --params-per-layer 4000000 --compute-ms 2 --bucket-mb 25 --iterations 30 --overlap off --markers"
	say "ddlsynth-gpu without ddlprof: $ARGS"
	timeout 120 $B/examples/ddlsynth-gpu $ARGS --plan-json "$OUT/plan.json" 2>&1 | tail -$((n + 2))
	say "ddlsynth-gpu under ddlprof (CUPTI auto)"
	timeout 120 $B/bin/ddlprof -o "$OUT/synth" -- $B/examples/ddlsynth-gpu $ARGS 2>&1 | tail -$((n + 2))
	$B/bin/ddlprof-report "$OUT/synth" | head -60
	$B/bin/ddlprof-report --json -o "$OUT/synth.json" --force "$OUT/synth"
	$B/bin/ddlprof-report --dump "$OUT/synth" | awk '{print $5}' | sort | uniq -c | sort -rn | head -30
	say "ddlsynth-gpu under ddlprof, event pairs only (--cupti off --kernel-sample 1)"
	timeout 120 $B/bin/ddlprof --cupti off --kernel-sample 1 -o "$OUT/synth-ev" -- \
		$B/examples/ddlsynth-gpu $ARGS 2>&1 | tail -$((n + 2))
	$B/bin/ddlprof-report "$OUT/synth-ev" | sed -n '/Communicators/,/Network activity/p'
	$B/bin/ddlprof-report --dump "$OUT/synth-ev" | grep -m5 ' kernel \| collective '
	say "the real runtime's return codes through the wrappers"
	$B/tests/gpu/realcuda >"$OUT/rc.plain"
	$B/bin/ddlprof -q -o "$OUT/rc" -- $B/tests/gpu/realcuda >"$OUT/rc.prof"
	if cmp -s "$OUT/rc.plain" "$OUT/rc.prof"; then echo "identical"; else diff "$OUT/rc.plain" "$OUT/rc.prof"; fi
	say "ddl_p2p_ring bandwidth (kernels/kernels.cu) via ddlsynth-gpu --p2p-test if built with it"
	$B/examples/ddlsynth-gpu --p2p-test 2>&1 | tail -3 || true
fi

PY=/usr/bin/python3
if [ "$GPU" = 1 ] && $PY -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	say "PyTorch training loop on the GPU, with and without ddlprof"
	cat >"$OUT/loop.py" <<'EOF'
import time, torch
m = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(8)]).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(256, 2048, device="cuda")
for i in range(60):
    if i == 10:
        torch.cuda.synchronize(); t = time.time()
    opt.zero_grad(); m(x).square().mean().backward(); opt.step()
torch.cuda.synchronize()
print("step_ms %.3f" % ((time.time() - t) / 50 * 1e3))
EOF
	timeout 120 $PY "$OUT/loop.py"
	timeout 120 $B/bin/ddlprof -o "$OUT/torch" -- $PY "$OUT/loop.py"
	$B/bin/ddlprof-report "$OUT/torch" | sed -n '/GPU work/,/Network activity/p'
else
	echo "PyTorch with CUDA: not here (skipped)"
fi
say "done in $(($(date +%s) - t0)) s"
