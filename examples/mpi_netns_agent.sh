#!/bin/sh
# Open MPI's launch agent for "hosts" made by scripts/netns-hosts.sh: the
# role ssh plays on a cluster. mpirun calls it as AGENT HOST COMMAND... to
# start its daemon on HOST; HOST is a namespace host's address (10.99.0.1
# is host 0, ...), and COMMAND, a shell string, runs in that host's
# network namespace under its hostname. Give it to mpirun with
#   --mca plm_rsh_agent "$PWD/examples/mpi_netns_agent.sh"
# and a host file of those addresses. DDL_NETNS_PREFIX as for netns-hosts.sh.
set -eu
case "${1:-}" in
-h | --help)
	echo "usage: mpi_netns_agent.sh HOST COMMAND..."
	echo "Open MPI's launch agent (--mca plm_rsh_agent) for netns-hosts.sh hosts:"
	echo "runs COMMAND in the namespace of the host whose address is HOST."
	exit 0
	;;
esac
if [ $# -lt 2 ]; then
	echo "usage: mpi_netns_agent.sh HOST COMMAND..." >&2
	exit 2
fi
hosts=$(dirname "$0")/../scripts/netns-hosts.sh
# netns-hosts.sh gives host I the address 10.99.0.(I+1).
case "$1" in
10.99.0.*)
	n=${1#10.99.0.}
	case "$n" in
	'' | *[!0-9]* | 0*) ;;
	*)
		host=$1
		shift
		[ "$n" -le 250 ] && exec "$hosts" run "$((n - 1))" /bin/sh -c "$*"
		set -- "$host"
		;;
	esac
	;;
esac
echo "mpi_netns_agent.sh: $1 is not the address of a netns-hosts.sh host" >&2
exit 1
