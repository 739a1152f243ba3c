#!/bin/sh
# The real-GPU check (DESIGN.md section 9): on a machine with an NVIDIA GPU,
# build everything (or use a build carried there, DDL_NO_BUILD=1), then run
# in one go every check that needs the device, printing what ddlprof
# captured and what it cost. Device time is scarce: this script is tested on
# the CPU path first (it says what it skips), and takes a few minutes at most.
#
#   scripts/device-check.sh [OUT]     figures and traces go to OUT (default $OUT or /tmp/ddl-device)
#
# Libraries the build links (libjansson, libzstd) may be carried in
# .devlibs/; NCCL and CUPTI are looked for in the CUDA toolkit and in the
# Python packages (nvidia-nccl, nvidia-cuda-cupti) a PyTorch install brings.
set -u
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-/tmp/ddl-device}}
mkdir -p "$OUT"
B=build
say() { printf '== %s\n' "$*"; }
t0=$(date +%s)
PY=$(command -v python3 || echo /usr/bin/python3)
W=${DDL_WORK:-/tmp/ddl-device-work}
rm -rf "$W"
mkdir -p "$W/libs"
# Libraries the carried build needs and this machine lacks, from .devlibs;
# the CUDA runtime, NCCL and CUPTI for our own programs (PyTorch keeps its own).
for f in .devlibs/*.so*; do
	[ -e "$f" ] || continue
	ldconfig -p | grep -q "/$(basename "$f")\$" || ln -sf "$PWD/$f" "$W/libs/"
done
LD_LIBRARY_PATH="$W/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
CUDALIBS=$(for l in libcudart.so.13 libnccl.so.2 libcupti.so.13; do
	find /usr/local/cuda/ /usr/local/cuda/extras/CUPTI/lib64/ /opt /usr/lib /usr/local/lib -name "$l" 2>/dev/null | head -1
done | xargs -r -n1 dirname | awk '!seen[$0]++' | paste -sd:)
CUDA_LDP="$CUDALIBS:$LD_LIBRARY_PATH"
ls "$W/libs"
echo "CUDA libraries for our programs: $CUDALIBS"

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

if [ "${DDL_NO_BUILD:-0}" = 1 ]; then
	say "build: carried here (DDL_NO_BUILD=1)"
	ldd $B/bin/ddlprof-report $B/examples/ddlsynth-gpu $B/bench/launch_gpu 2>&1 | grep 'not found' || echo "every library found"
else
	say "build (make -j, nvcc: $(command -v nvcc || echo /usr/local/cuda/bin/nvcc))"
	if ! make -j"$(nproc)" all $B/tests/ddltest $B/tests/gpu/realcuda $B/bench/launch $B/bench/libfakecudart.so \
		$B/bench/launch_gpu >"$OUT/build.log" 2>&1; then
		tail -30 "$OUT/build.log"
		echo "BUILD FAILED"
		exit 1
	fi
fi
ls -la $B/examples/ddlsynth* $B/lib/
ndev=0
[ "$GPU" = 1 ] && ndev=$(nvidia-smi -L | wc -l)
echo "devices: $ndev"

# median of the lines on stdin, by field F
median() { sort -t' ' -k"$1" -g | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}'; }
srcs() { $B/bin/ddlprof-report --dump "$1" | grep -o 'src=[a-z]*' | sort | uniq -c | tr '\n' ' '; echo; }

say "wrapper cost per kernel launch (no-op runtime; median of 5 processes)"
for i in 1 2 3 4 5; do
	DDLPROF_DIR="$W/launch$i" LD_PRELOAD=$B/lib/libddlprof.so DDLPROF_BUFFER_EVENTS=65536 \
		$B/bench/launch $B/bench/libfakecudart.so 16384 15
done | median 6

if [ "$GPU" = 1 ] && [ -x $B/bench/launch_gpu ]; then
	say "wrapper cost per kernel launch on the real runtime and GPU (median of 5 processes each)"
	echo "without ddlprof (wrapped and direct are the same call: the noise floor):"
	for i in 1 2 3 4 5; do env LD_LIBRARY_PATH="$CUDA_LDP" timeout 60 $B/bench/launch_gpu 25600 7; done | median 6
	echo "with libddlprof preloaded (every launch recorded, runs timed with event pairs):"
	for i in 1 2 3 4 5; do
		DDLPROF_DIR="$W/lgpu$i" DDLPROF_BUFFER_EVENTS=1048576 DDLPROF_CUPTI=0 LD_PRELOAD=$B/lib/libddlprof.so \
			LD_LIBRARY_PATH="$CUDA_LDP" timeout 60 $B/bench/launch_gpu 25600 7
	done | median 6
	echo "with libddlprof preloaded and CUPTI (through the launcher):"
	for i in 1 2 3 4 5; do
		DDLPROF_BUFFER_EVENTS=1048576 LD_LIBRARY_PATH="$CUDA_LDP" timeout 60 $B/bin/ddlprof -q -o "$W/lcupti$i" -- $B/bench/launch_gpu 25600 7
	done | median 6
	srcs "$W/lcupti1"
fi

# DDL_QUICK=1: the launch costs, the return codes and the GPU tests only
Q=${DDL_QUICK:-0}
if [ "$GPU" = 1 ] && [ "$Q" != 1 ] && [ -x $B/examples/ddlsynth-gpu ]; then
	ARGS="--ranks 1 --layers 8 --params-per-layer 4000000 --compute-ms 2 --bucket-mb 25 --iterations 30 --overlap off --markers"
	say "ddlsynth-gpu without ddlprof: $ARGS"
	env LD_LIBRARY_PATH="$CUDA_LDP" timeout 120 $B/examples/ddlsynth-gpu $ARGS --plan-json "$W/plan.json" 2>&1 | tail -3
	say "ddlsynth-gpu under ddlprof (CUPTI auto)"
	env LD_LIBRARY_PATH="$CUDA_LDP" timeout 120 $B/bin/ddlprof -o "$W/synth" -- $B/examples/ddlsynth-gpu $ARGS 2>&1 | tail -3
	$B/bin/ddlprof-report "$W/synth" | head -70
	$B/bin/ddlprof-report --json -o "$OUT/synth.json" --force "$W/synth"
	$B/bin/ddlprof-report --dump "$W/synth" | awk '{print $5}' | sort | uniq -c | sort -rn | head -30
	srcs "$W/synth"
	say "ddlsynth-gpu under ddlprof, event pairs only (--cupti off --kernel-sample 1)"
	env LD_LIBRARY_PATH="$CUDA_LDP" timeout 120 $B/bin/ddlprof --cupti off --kernel-sample 1 -o "$W/synth-ev" -- \
		$B/examples/ddlsynth-gpu $ARGS 2>&1 | tail -3
	$B/bin/ddlprof-report "$W/synth-ev" | sed -n '/per iteration/,/Network activity/p' | head -40
	$B/bin/ddlprof-report --json -o "$OUT/synth-ev.json" --force "$W/synth-ev"
	srcs "$W/synth-ev"
	$B/bin/ddlprof-report --dump "$W/synth-ev" | grep -m8 ' kernel \| collective \|dev_'
fi

if [ "$GPU" = 1 ] && [ -x $B/tests/gpu/realcuda ]; then
	say "the real runtime's return codes through the wrappers"
	env LD_LIBRARY_PATH="$CUDA_LDP" $B/tests/gpu/realcuda >"$W/rc.plain" 2>&1
	env LD_LIBRARY_PATH="$CUDA_LDP" $B/bin/ddlprof -q -o "$W/rc" -- $B/tests/gpu/realcuda >"$W/rc.prof" 2>&1
	env LD_LIBRARY_PATH="$CUDA_LDP" $B/bin/ddlprof -q --cupti off -o "$W/rc-ev" -- $B/tests/gpu/realcuda >"$W/rc.ev" 2>&1
	for v in prof ev; do
		if cmp -s "$W/rc.plain" "$W/rc.$v"; then echo "$v: identical"; else echo "$v:"; diff "$W/rc.plain" "$W/rc.$v"; fi
	done
	cat "$W/rc.plain"
fi

if [ "$GPU" = 1 ] && [ "$Q" != 1 -o "${DDL_TORCH:-0}" = 1 ] && $PY -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	say "PyTorch training loop on the GPU ($($PY -c 'import torch; print(torch.__version__)')), with and without ddlprof"
	cat >"$W/loop.py" <<'EOF2'
import time, torch
m = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(8)]).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(256, 2048, device="cuda")
for i in range(310):
    if i == 10:
        torch.cuda.synchronize(); t = time.time()
    opt.zero_grad(); m(x).square().mean().backward(); opt.step()
torch.cuda.synchronize()
print("step_ms %.3f" % ((time.time() - t) / 300 * 1e3))
EOF2
	echo "step ms, without ddlprof, with it, and with it but --cupti off, alternating (3 runs each):"
	for i in 1 2 3; do
		a=$(timeout 120 $PY "$W/loop.py" | awk '/step_ms/ {print $2}')
		b=$(timeout 120 $B/bin/ddlprof -q -o "$W/torch$i" -- $PY "$W/loop.py" | awk '/step_ms/ {print $2}')
		c=$(timeout 120 $B/bin/ddlprof -q --cupti off -o "$W/torchev$i" -- $PY "$W/loop.py" | awk '/step_ms/ {print $2}')
		echo "  without $a  with $b  events only $c"
	done
	mv "$W/torch1" "$W/torch"
	$B/bin/ddlprof-report "$W/torch" | sed -n "/GPU work/,/Network activity/p"  # incl. CUPTI correlation
	srcs "$W/torch"
	echo "launches named (of all):"
	$B/bin/ddlprof-report --dump "$W/torch" | grep ' cudaLaunchKernel ' | grep -vc 'name=kernel@'
	$B/bin/ddlprof-report --dump "$W/torch" | grep -c ' cudaLaunchKernel '
	$B/bin/ddlprof-report --dump "$W/torch" | grep ' cudaLaunchKernel ' | grep -o 'name=[^,]*' | sort | uniq -c | sort -rn | head -8
	say "PyTorch DDP on NCCL, one rank (examples/pytorch_ddp.py), under ddlprof"
	MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 \
		timeout 180 $B/bin/ddlprof -o "$W/ddp" -- $PY examples/pytorch_ddp.py --steps 40 --markers 2>&1 | tail -4
	$B/bin/ddlprof-report "$W/ddp" | head -60
	$B/bin/ddlprof-report --json -o "$OUT/ddp.json" --force "$W/ddp"
	srcs "$W/ddp"
	say "PyTorch DDP on NCCL with a DataLoader (2 workers, 2 ms a sample), under the Python hook"
	MASTER_ADDR=127.0.0.1 MASTER_PORT=29534 WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 \
		timeout 180 $B/bin/ddlprof -o "$W/ddpdl" -- $PY examples/pytorch_ddp.py --steps 40 \
		--workers 2 --sample-ms 2 --batch 64 2>&1 | tail -2
	$B/bin/ddlprof-report "$W/ddpdl" | sed -n "1,/Network sensitivity/p"
	$B/bin/ddlprof-report --json -o "$OUT/ddpdl.json" --force "$W/ddpdl"
else
	echo "PyTorch with CUDA: not here (skipped)"
fi

if [ -x $B/tests/ddltest ]; then
	say "the GPU and NVTX tests (NVTX with a CUDA build of PyTorch where there is one)"
	T="gpu_ nvtx_ emu_launch emu_cupti kernels_"
	[ "$Q" = 1 ] && T="gpu_real emu_launch"
	DDLT_PYTHON=$PY timeout 300 $B/tests/ddltest $T 2>&1 | grep -v "^    [a-z-]*: rank\|waits\|makes the others" | tail -40
fi
(cd "$W" && ls -d synth synth-ev torch ddp ddpdl rc lcupti1 2>/dev/null | xargs -r tar -czf "$OUT/traces.tar.gz") && ls -la "$OUT/traces.tar.gz"
say "done in $(($(date +%s) - t0)) s"
