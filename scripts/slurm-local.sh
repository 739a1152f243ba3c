#!/bin/sh
# A real Slurm on this machine, for the tests: munged, slurmctld and three
# slurmd (nodes n0, n1, n2 on this host, each its own daemon with its own
# port, NCPUS CPUs and NCPUS GPUs as slots; GPUs are character devices
# made in DIR), all under DIR, with a topology.conf of two leaf switches
# (s0: n0 and n1, s1: n2) under one top switch.
#
#   slurm-local.sh up DIR [NCPUS]   start them (NCPUS default 4); prints the
#                                   slurm.conf to put in SLURM_CONF
#   slurm-local.sh down DIR         stop them (by the pids in DIR) and remove DIR
#
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge. Exits 2
# when the daemons cannot be had (not root, not installed, or they do not come
# up: their logs are in DIR), so callers can skip, and 1 for bad usage.
set -eu

usage() {
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 1
}

# Stops what DIR's pid files name, daemons first, munged last.
stop() {
	for f in "$1"/slurmd.*.pid "$1"/slurmctld.pid "$1"/munge/pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f" 2>/dev/null || true)
		case "$p" in '' | *[!0-9]*) continue ;; esac
		kill "$p" 2>/dev/null || true
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$p" 2>/dev/null || true
	done
}

# A TCP port free on loopback now, from a range the tests do not use.
free_port() {
	python3 - "$1" <<'EOF'
import socket, sys
base = int(sys.argv[1])
for p in range(base, base + 400):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
EOF
}

unavailable() {
	echo "slurm-local: $*" >&2
	exit 2
}

case "${1:-}" in
up)
	[ $# -ge 2 ] || usage
	D=$2
	N=${3:-4}
	case "$N" in '' | *[!0-9]*) usage ;; esac
	[ "$(id -u)" = 0 ] || unavailable "needs root (slurmd runs jobs as their users)"
	for b in munged slurmctld slurmd srun sbatch sinfo scontrol; do
		command -v $b >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
		command -v $b >/dev/null 2>&1 || unavailable "no $b (Debian: slurmctld slurmd slurm-client munge)"
	done
	mkdir -p "$D/state" "$D/munge" "$D/spool/n0" "$D/spool/n1" "$D/spool/n2"
	D=$(cd "$D" && pwd)
	chmod 700 "$D/munge"
	dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 2>/dev/null
	chmod 600 "$D/munge/munge.key"
	munged --force -S "$D/munge/sock" --key-file="$D/munge/munge.key" --pid-file="$D/munge/pid" \
		--log-file="$D/munge/log" --seed-file="$D/munge/seed" ||
		unavailable "munged does not start (see $D/munge/log)"
	last=$((N - 1))
	command -v python3 >/dev/null 2>&1 || unavailable "no python3 (it finds free ports)"
	for i in $(seq 0 $last); do
		mknod "$D/gpu$i" c 1 3 2>/dev/null || { stop "$D"; unavailable "cannot make the GPUs' device nodes in $D"; }
	done
	host=$(hostname -s)
	ctl=$(free_port 16800)
	p0=$(free_port $((ctl + 1)))
	p1=$(free_port $((p0 + 1)))
	p2=$(free_port $((p1 + 1)))
	cat >"$D/slurm.conf" <<EOF
ClusterName=ddltest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctl
AuthType=auth/munge
AuthInfo=socket=$D/munge/sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.%n.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
TopologyPlugin=topology/tree
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
MailProg=/bin/true
GresTypes=gpu
NodeName=n0 NodeHostname=$host NodeAddr=127.0.0.1 Port=$p0 CPUs=$N Gres=gpu:$N State=UNKNOWN
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$p1 CPUs=$N Gres=gpu:$N State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$p2 CPUs=$N Gres=gpu:$N State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
	: >"$D/gres.conf"
	for n in n0 n1 n2; do
		echo "NodeName=$n Name=gpu File=$D/gpu[0-$last]" >>"$D/gres.conf"
	done
	cat >"$D/topology.conf" <<EOF
SwitchName=s0 Nodes=n0,n1
SwitchName=s1 Nodes=n2
SwitchName=top Switches=s0,s1
EOF
	export SLURM_CONF="$D/slurm.conf"
	slurmctld -i || { stop "$D"; unavailable "slurmctld does not start (see $D/slurmctld.log)"; }
	for n in n0 n1 n2; do
		slurmd -N $n || { stop "$D"; unavailable "slurmd -N $n does not start (see $D/slurmd.$n.log)"; }
	done
	# up when sinfo shows the three nodes idle (about 2 s)
	i=0
	while [ "$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)" -lt 3 ]; do
		i=$((i + 1))
		if [ $i -gt 150 ]; then
			stop "$D"
			unavailable "the nodes did not come up in 30 s (see $D/slurmctld.log)"
		fi
		sleep 0.2
	done
	echo "$D/slurm.conf"
	;;
down)
	[ $# -eq 2 ] || usage
	[ -d "$2" ] || exit 0
	stop "$2"
	rm -rf "$2"
	;;
*)
	usage
	;;
esac
