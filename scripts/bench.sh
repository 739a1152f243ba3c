#!/bin/sh
# make bench: figures, not pass/fail. Medians of several runs, and ratios
# against a baseline measured in the same run.
#   scripts/bench.sh [reader]   reader: only trace size and reader speed
# B names the build folder (make B=... bench passes it on).
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
ONLY=${1:-all}
LIB=$B/lib/libddlprof.so
OV=$B/bench/overhead
T=$(mktemp -d /tmp/ddlbench.XXXXXX)
trap 'rm -rf "$T"' EXIT
RUNS=${RUNS:-5}
med() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
pre() { d=$1; shift; env LD_PRELOAD="$LIB" DDLPROF_DIR="$T/$d" DDLPROF_BUFFER_EVENTS=262144 "$@"; }

echo "== ddlprof bench ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
if [ "$ONLY" != reader ]; then
echo "-- cost of an intercepted call (send with the real call replaced by a no-op; medians of $RUNS processes x 9 rounds x 200000 calls)"
for i in $(seq "$RUNS"); do pre "ov$i" $OV fake 200000 9; done >"$T/fake"
for i in $(seq "$RUNS"); do $OV floor 200000 9; done >"$T/floor"
add=$(awk '{print $6}' "$T/fake" | med)
floor=$(awk '{print $6}' "$T/floor" | med)
echo "   added per call:     $add ns   (each process: $(awk '{printf "%s ", $6}' "$T/fake"))"
echo "   floor (2 rdtsc + 32-byte store): $floor ns; ratio to floor: $(echo "$add $floor" | awk '{printf "%.2f", $1/$2}')"
if command -v valgrind >/dev/null 2>&1; then
	pre cg valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" $OV count 100000 >/dev/null 2>&1 || true
	if [ -s "$T/cg.out" ]; then
		callgrind_annotate --inclusive=yes "$T/cg.out" 2>/dev/null | tr -d ',' |
			awk '/loop_wrapped/ {w=$1} /loop_direct/ {d=$1} END {if (w && d) printf "   instructions added per call: %.1f (callgrind: %d wrapped, %d direct, 100000 calls each)\n", (w-d)/100000, w, d}'
	fi
fi
if [ -x $B/bench/launch ] && [ -f $B/bench/libfakecudart.so ]; then
	echo "-- cost of a wrapped kernel launch (cudaLaunchKernel into a runtime that does nothing;"
	echo "   wrapped against direct in the same process; medians of $RUNS processes x 15 rounds x 16384;"
	echo "   a 2 MiB ring, twice the default, which the rounds fill to half)"
	for i in $(seq "$RUNS"); do
		pre "kl$i" env DDLPROF_BUFFER_EVENTS=65536 $B/bench/launch $B/bench/libfakecudart.so 16384 15
	done >"$T/launch"
	echo "   added per launch:   $(awk '{print $6}' "$T/launch" | med) ns   (each process: $(awk '{printf "%s ", $6}' "$T/launch"))"
	for i in $(seq "$RUNS"); do
		pre "km$i" env DDLPROF_BUFFER_EVENTS=65536 $B/bench/launch $B/bench/libfakecudart.so 16384 15 8
	done >"$T/mlaunch"
	echo "   8 kernels in turn:  $(awk '{print $6}' "$T/mlaunch" | med) ns   (each process: $(awk '{printf "%s ", $6}' "$T/mlaunch"))"
	if [ -f $B/lib/libddlemu.so ]; then
		echo "-- the same on the CPU emulation: a registered kernel on a stream whose device is busy"
		echo "   through each round, as a GPU running behind its host (bench/launch.c); medians of $RUNS x 31 x 4096"
		for i in $(seq "$RUNS"); do
			pre "ke$i" env DDLPROF_BUFFER_EVENTS=65536 $B/bench/launch $B/lib/libddlemu.so 4096 31
		done >"$T/elaunch"
		for i in $(seq "$RUNS"); do
			pre "kf$i" env DDLPROF_BUFFER_EVENTS=65536 $B/bench/launch $B/lib/libddlemu.so 4096 31 8
		done >"$T/emlaunch"
		echo "   emulated launch:    $(awk '{print $4}' "$T/elaunch" | med) ns   added per launch: $(awk '{print $6}' "$T/elaunch" | med) ns   (each process: $(awk '{printf "%s ", $6}' "$T/elaunch"))"
		echo "   8 kernels in turn:  $(awk '{print $4}' "$T/emlaunch" | med) ns   added per launch: $(awk '{print $6}' "$T/emlaunch" | med) ns   (each process: $(awk '{printf "%s ", $6}' "$T/emlaunch"))"
	fi
fi
echo "-- address space the library adds (VmSize, KiB; the same program without it is the baseline)"
base=$($OV vm 1 | awk '{print $2}')
for w in thread inline; do
	set -- $(env LD_PRELOAD="$LIB" DDLPROF_DIR="$T/vm$w" DDLPROF_WRITER=$w $OV vm 1 | awk '{print $2, $4}')
	echo "   writer $w: +$(($1 - base)) KiB before the first event, +$(($2 - base)) KiB after one (its ring and the writer's buffers)"
done
echo "-- send() of 64 bytes on a socketpair, with and without the library (medians of $RUNS processes)"
for i in $(seq "$RUNS"); do $OV send 200000 5; done | awk '{print $2}' >"$T/plain"
for i in $(seq "$RUNS"); do pre "s$i" $OV send 200000 5; done | awk '{print $2}' >"$T/with"
p=$(med <"$T/plain"); w=$(med <"$T/with")
echo "   without: $p ns   with: $w ns   ratio: $(echo "$w $p" | awk '{printf "%.3f", $1/$2}')"
dropped=$($B/bin/ddlprof-report --json "$T"/s1 | awk -F: '/events_dropped/ {gsub(/[ ,]/,"",$2); print $2; exit}')
echo "   events dropped in that run: ${dropped:-?}"
fi
# readspeed's line of "key value" pairs, as the figures a reader wants
speeds() {
	awk '{for (i = 1; i < NF; i += 2) v[$i] = $(i + 1)
		printf "%6.2f bytes/event   stream %9.3g events/s (%9.3g per CPU second)   read %9.3g events/s\n",
			v["bytes_per_event"], v["stream_events_per_s"], v["stream_cpu_events_per_s"],
			v["read_events_per_s"]}'
}
echo "-- trace size and reader speed by codec (DDLPROF_COMPRESS; lz4 is the default): 2000000"
echo "   events with varied sizes; medians of 5 reads; stream: chunk by chunk into a one-pass"
echo "   consumer, over wall-clock time and over the CPU time the reader had; read: the whole"
echo "   trace into memory"
for c in lz4 zstd none; do
	env LD_PRELOAD="$LIB" DDLPROF_DIR="$T/ev$c" DDLPROF_COMPRESS=$c DDLPROF_BUFFER_EVENTS=1048576 $OV events 2000000
	printf '   %-5s %s\n' "$c" "$($B/bench/readspeed 5 "$T"/ev$c/*.ddlt | speeds)"
done
if [ -d $B/demo-trace ]; then
	echo "   the demo job's traces (real socket traffic, as written): $($B/bench/readspeed 5 $B/demo-trace/*.ddlt | speeds)"
fi
env LD_PRELOAD="$LIB" DDLPROF_DIR="$T/ev8m" DDLPROF_BUFFER_EVENTS=1048576 $OV events 8000000
echo "   streaming reader's peak memory: $($B/bench/readspeed -m "$T"/evlz4/*.ddlt | awk '{print $4}') KiB for" \
	"2,000,000 events, $($B/bench/readspeed -m "$T"/ev8m/*.ddlt | awk '{print $4}') KiB for 8,000,000"
rm -rf "$T/ev8m"
[ "$ONLY" = reader ] && exit 0
B=$B bench/report_scale.sh
echo "-- scheduler simulator"
bench/sim_bench.sh | sed 's/^/   /'
B=$B bench/torch_step.sh
