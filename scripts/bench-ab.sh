#!/bin/sh
# A change's cost on the hot path against a baseline build, in alternating
# runs (the machine's drift falls on both alike): the added cost of an
# intercepted call (send into a no-op) and of a kernel launch (into a
# runtime that does nothing), medians of ROUNDS processes each; with
# valgrind, the instructions added per call, which do not drift at all.
#   scripts/bench-ab.sh BASE_BUILD NEW_BUILD     e.g. ../base/build build
# Each build folder needs lib/libddlprof.so and bench/ (make all bench builds them).
set -eu
[ $# -eq 2 ] || { echo "usage: scripts/bench-ab.sh BASE_BUILD NEW_BUILD" >&2; exit 2; }
ROUNDS=${ROUNDS:-7}
T=$(mktemp -d /tmp/ddlab.XXXXXX)
trap 'rm -rf "$T"' EXIT
med() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
run() { # BUILD TAG I
	b=$1
	env LD_PRELOAD="$b/lib/libddlprof.so" DDLPROF_DIR="$T/$2$3" DDLPROF_BUFFER_EVENTS=262144 \
		"$b/bench/overhead" fake 200000 9 | awk '{print $6}' >>"$T/$2.call"
	if [ -x "$b/bench/launch" ] && [ -f "$b/bench/libfakecudart.so" ]; then
		env LD_PRELOAD="$b/lib/libddlprof.so" DDLPROF_DIR="$T/$2k$3" DDLPROF_BUFFER_EVENTS=65536 \
			"$b/bench/launch" "$b/bench/libfakecudart.so" 16384 15 | awk '{print $6}' >>"$T/$2.launch"
	fi
}
for i in $(seq "$ROUNDS"); do
	run "$1" base "$i"
	run "$2" new "$i"
done
echo "-- $ROUNDS alternating rounds; medians (each process's figure in brackets)"
for what in call launch; do
	[ -s "$T/base.$what" ] || continue
	b=$(med <"$T/base.$what")
	n=$(med <"$T/new.$what")
	echo "   added per $what: base $b ns, new $n ns, ratio $(echo "$n $b" | awk '{printf "%.3f", $1/$2}')"
	echo "      base [$(tr '\n' ' ' <"$T/base.$what")] new [$(tr '\n' ' ' <"$T/new.$what")]"
done
if command -v valgrind >/dev/null 2>&1; then
	for tag in base new; do
		b=$1
		[ "$tag" = new ] && b=$2
		# a ring that never gets half full: the fast path (under valgrind the
		# writer runs seldom, and a default ring would take the slow one)
		env LD_PRELOAD="$b/lib/libddlprof.so" DDLPROF_DIR="$T/cg$tag" DDLPROF_BUFFER_EVENTS=1048576 \
			valgrind --tool=callgrind \
			--callgrind-out-file="$T/cg.$tag" "$b/bench/overhead" count 100000 >/dev/null 2>&1 || true
		callgrind_annotate --inclusive=yes "$T/cg.$tag" 2>/dev/null | tr -d ',' |
			awk -v t="$tag" '/loop_wrapped/ {w=$1} /loop_direct/ {d=$1} END {if (w && d) printf "   instructions added per call (callgrind), %s: %.1f\n", t, (w-d)/100000}'
		[ -x "$b/bench/launch" ] || continue
		env LD_PRELOAD="$b/lib/libddlprof.so" DDLPROF_DIR="$T/cgk$tag" DDLPROF_BUFFER_EVENTS=65536 \
			valgrind --tool=callgrind --callgrind-out-file="$T/cgk.$tag" "$b/bench/launch" \
			"$b/bench/libfakecudart.so" 4096 3 >/dev/null 2>&1 || true
		# the wrapper's own instructions, inclusive, per call: the call edge's
		callgrind_annotate --inclusive=yes "$T/cgk.$tag" 2>/dev/null | tr -d ',()x' |
			awk -v t="$tag" '$3 == "=>" && $4 ~ /cuda.c:cudaLaunchKernel$/ {printf "   instructions per wrapped launch (callgrind, the no-op runtime included), %s: %.1f\n", t, $1/$5; exit}'
	done
fi
