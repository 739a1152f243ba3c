#!/bin/sh
# Installs the Debian packages the build and the tests need, when missing.
# As root it installs them; otherwise it names them and fails.
#   libjansson-dev  JSON output of the tools and the tests
#   libzstd-dev     decompressing trace chunks (the library dlopens libzstd)
#   liblz4-dev      decompressing LZ4 trace chunks, the default codec (the library dlopens liblz4)
#   zlib1g-dev      the tests: decoding the HTML report's screenshot (PNG)
#   libsqlite3-dev  ddlprof-report --sqlite: the report as an SQLite database (SQLite's
#                   own library writes the file format, as jansson writes JSON)
#   sqlite3         the tests: the sqlite3 shell queries that database as users do
#   libunwind-dev   call-site stacks (optional back end, found at run time)
#   libpapi-dev     hardware counters (optional back end, found at run time)
#   iproute2        network namespaces for the multi-host tests
#   pkg-config      locating the libraries above
#   clang, libclang-rt-14-dev  libFuzzer for make fuzz (the reader's fuzz target)
# and, where it can (as root), what the real-workload tests use; those tests
# skip without it:
#   python3-torch   PyTorch DistributedDataParallel over gloo (CPU)
#   openmpi-bin, libopenmpi-dev  Open MPI's mpirun and mpicc, for
#                   examples/mpi_allreduce and the MPI tests (about 11 MB)
#   chromium        headless rendering of the HTML report (a screenshot test)
#   groff-base      checks that the man pages render without warnings
set -eu
OPTIONAL="python3-torch openmpi-bin libopenmpi-dev chromium groff-base"
PKGS="libjansson-dev libzstd-dev liblz4-dev zlib1g-dev libsqlite3-dev sqlite3 libunwind-dev libpapi-dev iproute2 pkg-config clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
optional=""
for p in $OPTIONAL; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		optional="$optional $p"
done
if [ "$(id -u)" = 0 ]; then
	missing="$missing$optional"
elif [ -n "$optional" ]; then
	echo "ddlprof: tests that need$optional will be skipped" >&2
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "ddlprof: missing Debian packages:$missing" >&2
	echo "ddlprof: install them with: sudo apt-get install$missing" >&2
	exit 1
fi
echo "ddlprof: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
