#!/bin/sh
# make demo: profiles the embedded default job, ddlsynth on the CPU
# emulation of a GPU cluster (4 ranks on 2 emulated hosts, hierarchical
# all-reduce, interconnect and network links paced at 2 and 0.5 Gbit/s),
# and prints the report beside the job's own plan. Without the CUDA
# headers (no emulation built) it profiles examples/tcpring instead: 4
# ranks doing compute and a ring all-reduce over TCP. The commands are
# written out as the README shows them (docs_readme_demo checks that).
set -eu
cd "$(dirname "$0")/.."
rm -rf build/demo-trace build/demo-plan.json
if [ -x build/examples/ddlsynth ]; then
	build/bin/ddlprof -o build/demo-trace --run-id demo --kernel-sample 1 -- build/examples/ddlsynth \
		--ranks 4 --ranks-per-host 2 --layers 6 --params-per-layer 500k --compute-ms 4 \
		--bucket-mb 4 --overlap off --allreduce hierarchical --intra-gbps 2 --net-gbps 0.5 \
		--input-mb 2 --data-ms 3 --iterations 12 --markers --plan-json build/demo-plan.json --force
	echo
	build/bin/ddlprof-report build/demo-trace
	echo
	echo "The job's plan (what an ideal profiler finds), per iteration:"
	grep -o '"\(compute_s\|data_s\|intra_s\|inter_s\)": [0-9.e-]*' build/demo-plan.json | head -4 |
		awk -F': ' '{n[$1]=$2 * 1000} END {printf "  compute %.2f ms, data %.2f ms, interconnect %.2f ms, network %.2f ms\n", n["\"compute_s\""], n["\"data_s\""], n["\"intra_s\""], n["\"inter_s\""]}'
else
	build/bin/ddlprof -o build/demo-trace --run-id demo -- build/examples/tcpring
	echo
	build/bin/ddlprof-report build/demo-trace
fi
echo
echo "JSON for tools and CI: build/bin/ddlprof-report --json build/demo-trace"
