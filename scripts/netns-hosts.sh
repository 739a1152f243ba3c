#!/bin/sh
# Several "hosts" on one machine, to see network stalls without a cluster:
# N network namespaces on one bridge, each with its own address, and each
# command run in its own UTS namespace with its own hostname.
#
#   netns-hosts.sh up N [RATE]     make hosts 0..N-1 (10.99.0.1 ...), RATE is a
#                                  tc tbf rate per host link, e.g. 200mbit
#   netns-hosts.sh run I CMD...    run CMD on host I (hostname PREFIX-hI)
#   netns-hosts.sh addr I          print host I's address
#   netns-hosts.sh dev I           print host I's interface name (in its namespace)
#   netns-hosts.sh down            remove everything
#
# DDL_NETNS_PREFIX (default "ddl") names the namespaces, so tests can run
# side by side. Needs root and iproute2; exits 2 when namespaces cannot be
# made, so callers can skip, and 1 for bad usage.
set -eu
P=${DDL_NETNS_PREFIX:-ddl}
BR=${P}-br

usage() {
	cat <<'USAGE'
usage: netns-hosts.sh up N [RATE]   make hosts 0..N-1 (10.99.0.1 ...) in network
                                    namespaces on one bridge; RATE is a tc tbf
                                    rate per host link, e.g. 200mbit
       netns-hosts.sh run I CMD...  run CMD on host I, with its own hostname
       netns-hosts.sh addr I        print host I's address
       netns-hosts.sh dev I         print host I's interface (in its namespace)
       netns-hosts.sh down          remove everything
DDL_NETNS_PREFIX (default ddl) names the namespaces (PREFIX-hI, PREFIX-br).
Needs root and iproute2. Exits 2 when namespaces cannot be made, 1 for bad
usage.
USAGE
}

# A host number, or a message and exit 1.
num() {
	case "$1" in
	'' | *[!0-9]*)
		echo "netns-hosts: '$1' is not a host number or count" >&2
		exit 1
		;;
	esac
}

addr() {
	num "$1"
	echo "10.99.0.$(($1 + 1))"
}

case "${1:-}" in
up)
	n=${2:?usage: netns-hosts.sh up N [RATE]}
	num "$n"
	if [ "$n" -lt 1 ] || [ "$n" -gt 250 ]; then
		echo "netns-hosts: N must be 1 to 250" >&2
		exit 1
	fi
	rate=${3:-}
	if ! ip netns add "$BR" 2>/dev/null; then
		echo "netns-hosts: cannot make network namespaces here" >&2
		exit 2
	fi
	ip -n "$BR" link add br0 type bridge
	ip -n "$BR" link set br0 up
	i=0
	while [ "$i" -lt "$n" ]; do
		h=$P-h$i
		ip netns add "$h"
		ip link add "$P$i" type veth peer name "$P${i}b"
		ip link set "$P$i" netns "$h"
		ip link set "$P${i}b" netns "$BR"
		ip -n "$BR" link set "$P${i}b" master br0 up
		ip -n "$h" addr add "$(addr "$i")/24" dev "$P$i"
		ip -n "$h" link set "$P$i" up
		ip -n "$h" link set lo up
		if [ -n "$rate" ]; then
			ip netns exec "$h" tc qdisc add dev "$P$i" root tbf rate "$rate" burst 64kb latency 50ms
		fi
		i=$((i + 1))
	done
	;;
run)
	i=${2:?usage: netns-hosts.sh run I CMD...}
	num "$i"
	shift 2
	exec ip netns exec "$P-h$i" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$P-h$i" "$@"
	;;
addr)
	addr "${2:?usage: netns-hosts.sh addr I}"
	;;
dev)
	num "${2:?usage: netns-hosts.sh dev I}"
	echo "$P$2"
	;;
down)
	for ns in $(ip netns list | awk '{print $1}' | grep -E "^$P-(br|h[0-9]+)$" || true); do
		ip netns del "$ns" || true
	done
	;;
-h | --help | help)
	usage
	;;
*)
	[ -n "${1:-}" ] && echo "netns-hosts: unknown command '$1'" >&2
	usage >&2
	exit 1
	;;
esac
