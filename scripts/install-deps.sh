#!/bin/sh
# The Debian packages a make target needs, checked before it runs: as root
# the missing ones are installed; otherwise they are named and it fails.
#
#   scripts/install-deps.sh [--list] [SET]...    SET: build demo check fuzz bench
#                                                (default: all of them, make deps)
#
# --list prints the packages of the sets (required, then optional) and checks
# nothing. Each target asks only for what it uses:
#   build   make, make all; make demo too (it profiles what the build made)
#     libjansson-dev  JSON output of the tools and the tests
#     libzstd-dev     decompressing trace chunks (the library dlopens libzstd)
#     liblz4-dev      decompressing LZ4 trace chunks, the default codec (the library dlopens liblz4)
#     libsqlite3-dev  ddlprof-report --sqlite: the report as an SQLite database (SQLite's
#                     own library writes the file format, as jansson writes JSON)
#     pkg-config      locating the libraries above
#   check   make check: the build's, and
#     sqlite3         the tests: the sqlite3 shell queries that database as users do
#     zlib1g-dev      the tests: decoding the HTML report's screenshot (PNG)
#     libunwind-dev   call-site stacks (optional back end, found at run time)
#     libpapi-dev     hardware counters (optional back end, found at run time)
#     iproute2        network namespaces for the multi-host tests
#   and, where it can (as root), what the real-workload tests use; those tests
#   skip without it:
#     python3-torch   PyTorch DistributedDataParallel over gloo (CPU)
#     openmpi-bin, libopenmpi-dev  Open MPI's mpirun and mpicc, for
#                     examples/mpi_allreduce and the MPI tests (about 11 MB)
#     chromium        headless rendering of the HTML report (a screenshot test)
#     groff-base      checks that the man pages render without warnings
#     slurmctld, slurmd, slurm-client, munge  a real one-node Slurm for the
#                     srun and sbatch test (scripts/slurm-local.sh)
#   fuzz    make fuzz: the build's, and
#     clang, libclang-rt-14-dev  libFuzzer
#   bench   make bench: the build's, and where it can python3-torch (the
#           PyTorch step's figures; skipped without it)
# Exit status: 0 when nothing required is missing (or it was installed), 1
# when something required is missing and this is not root, 2 for bad usage.
set -eu
list=0
sets=""
for a in "$@"; do
	case "$a" in
	--list) list=1 ;;
	build | demo | check | fuzz | bench) sets="$sets $a" ;;
	-h | --help)
		echo "usage: install-deps.sh [--list] [build|demo|check|fuzz|bench]..."
		exit 0
		;;
	*)
		echo "install-deps.sh: unknown set '$a' (build, demo, check, fuzz, bench)" >&2
		exit 2
		;;
	esac
done
[ -n "$sets" ] || sets="build check fuzz bench"

BUILD="libjansson-dev libzstd-dev liblz4-dev libsqlite3-dev pkg-config"
need="" want=""
for s in $sets; do
	case "$s" in
	build | demo) need="$need $BUILD" ;;
	check)
		need="$need $BUILD zlib1g-dev sqlite3 libunwind-dev libpapi-dev iproute2"
		want="$want python3-torch openmpi-bin libopenmpi-dev chromium groff-base"
		want="$want slurmctld slurmd slurm-client munge"
		;;
	fuzz) need="$need $BUILD clang libclang-rt-14-dev" ;;
	bench)
		need="$need $BUILD"
		want="$want python3-torch"
		;;
	esac
done

# Each package once, in order of first mention.
uniq_words() {
	out=""
	for p in "$@"; do
		case " $out " in
		*" $p "*) ;;
		*) out="$out $p" ;;
		esac
	done
	echo "$out"
}
# shellcheck disable=SC2086
need=$(uniq_words $need)
# shellcheck disable=SC2086
want=$(uniq_words $want)
if [ "$list" = 1 ]; then
	echo "required:$need"
	echo "optional:$want"
	exit 0
fi

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
missing=""
for p in $need; do
	installed "$p" || missing="$missing $p"
done
optional=""
for p in $want; do
	installed "$p" || optional="$optional $p"
done
if [ "$(id -u)" = 0 ]; then
	missing="$missing$optional"
elif [ -n "$optional" ]; then
	echo "ddlprof: the tests and figures that need$optional will be skipped" >&2
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
