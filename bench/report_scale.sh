#!/bin/sh
# ddlprof-report at scale, figures not pass/fail: bench/bigtrace's synthetic
# data-parallel socket job at 2 (its ring's least), 128 and 1,024 ranks, and for each the
# report's events per second end to end (ddlprof-report -q --json, wall
# clock) and its peak resident memory, with 1 thread and with the default
# (--threads: the machine's CPUs), against the streaming reader's rate on
# the same files in the same run (bench/readspeed: what reading alone
# costs); and the peak with --memory 0 (no events kept but those being
# worked on: what the model itself costs). Medians of RUNS runs (default 3).
# A third field passes bigtrace -c CHUNK: 128:1000000:800000 is ten times
# 128:100000's events in as many steps (46), so that its peak against
# 128:100000's is the memory against events with the iterations the same.
#
#   bench/report_scale.sh [RANKS:EVENTS_PER_RANK[:CHUNK] ...]
#   default 2:1000000 128:100000 128:1000000:800000 1024:10000 1024:100000
#
# B names the build folder (build). Needs /usr/bin/time (GNU time) for
# the peak memory; without it the memory column says '?'.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
RUNS=${RUNS:-3}
for x in bin/ddlprof-report bench/bigtrace bench/readspeed; do
	[ -x "$B/$x" ] || { echo "report_scale: no $B/$x: make bench (or make $B/$x) first" >&2; exit 1; }
done
T=$(mktemp -d /tmp/ddlscale.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ $# -gt 0 ] || set -- 2:1000000 128:100000 128:1000000:800000 1024:10000 1024:100000
med() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
have_time=0
[ -x /usr/bin/time ] && /usr/bin/time -f %M true >/dev/null 2>&1 && have_time=1

# One report run: prints "SECONDS KIB"; a report that fails is said, and stops the script.
one() {
	if [ $have_time = 1 ]; then
		if ! /usr/bin/time -f '%e %M' -o "$T/time" "$@" >"$T/out.json" 2>"$T/err"; then
			echo "report_scale: $* failed: $(head -c 300 "$T/err")" >&2
			exit 1
		fi
		cat "$T/time"
	else
		s=$(date +%s.%N)
		"$@" >"$T/out.json" 2>/dev/null || true
		echo "$(echo "$s $(date +%s.%N)" | awk '{print $2 - $1}') ?"
	fi
}

echo "-- ddlprof-report at scale (bench/bigtrace's socket job; $(nproc) CPUs; medians of $RUNS)"
printf '   %6s %11s %12s | %-28s | %-28s | %-13s | %s\n' ranks events "trace MB" \
	"1 thread: events/s, peak" "$(nproc) threads: events/s, peak" "--memory 0" "reader alone (streaming)"
for spec in "$@"; do
	ranks=${spec%%:*}
	per=${spec#*:}
	chunk=65536
	case $per in *:*) chunk=${per#*:} per=${per%%:*} ;; esac
	rm -rf "$T/d"
	$B/bench/bigtrace -c "$chunk" "$T/d" "$ranks" "$per" >/dev/null
	total=$((ranks * per))
	mb=$(du -sm "$T/d" | awk '{print $1}')
	for th in 1 0; do
		: >"$T/s$th"
		: >"$T/m$th"
		for i in $(seq "$RUNS"); do
			if [ $th = 1 ]; then
				set -- $(one $B/bin/ddlprof-report -q --json --threads 1 "$T/d")
			else
				set -- $(one $B/bin/ddlprof-report -q --json "$T/d")
			fi
			[ $# -ge 2 ] || exit 1 # the report failed: said above
			echo "$1" >>"$T/s$th"
			echo "$2" >>"$T/m$th"
		done
	done
	rate() { awk -v n="$total" -v s="$(med <"$1")" 'BEGIN {printf "%.3g events/s", (s > 0 ? n / s : 0)}'; }
	mem() { m=$(med <"$1" 2>/dev/null || echo '?'); [ "$m" = '?' ] && echo '?' || echo "$((${m%.*} / 1024)) MB"; }
	m0='?'
	if [ $have_time = 1 ]; then
		set -- $(one $B/bin/ddlprof-report -q --json --memory 0 "$T/d")
		m0="$(($2 / 1024)) MB"
	fi
	reader=$($B/bench/readspeed 3 "$T"/d/*.ddlt | awk '{for (i = 1; i < NF; i += 2) if ($i == "stream_events_per_s") printf "%.3g events/s", $(i + 1)}')
	printf '   %6d %11d %12d | %-28s | %-28s | %-13s | %s\n' "$ranks" "$total" "$mb" \
		"$(rate "$T/s1") ($(mem "$T/m1"))" "$(rate "$T/s0") ($(mem "$T/m0"))" "$m0" "$reader"
done
