#!/bin/sh
# make demo: profiles the embedded default job (examples/tcpring: 4 ranks
# doing compute and a ring all-reduce over TCP) and prints the report.
set -eu
cd "$(dirname "$0")/.."
out=build/demo-trace
rm -rf "$out"
build/bin/ddlprof -o "$out" --run-id demo -- build/examples/tcpring
echo
build/bin/ddlprof-report "$out"
echo
echo "JSON for tools and CI: build/bin/ddlprof-report --json $out"
