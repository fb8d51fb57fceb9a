#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for testing `iclab sweep --launcher slurm` for real:
# installs Debian's slurm-wlm and munge (when missing), writes a minimal slurm.conf for this host, and starts
# munged, slurmctld and slurmd (no systemd needed). Idempotent: a running cluster is left as it is.
#   scripts/slurm/local_cluster.sh          set up and start
#   scripts/slurm/local_cluster.sh stop     stop the daemons this script started (by their pid files)
# Exit status: 0 up (or stopped); 2 an unknown argument (usage line, nothing started); 1 the node did not come up.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/apt_ensure.sh
. scripts/lib/args.sh
usage="usage: scripts/slurm/local_cluster.sh [stop]"
case "$#:${1:-}" in
  0:|1:stop) ;;
  1:-h|1:--help) echo "$usage"; exit 0 ;;
  *) usage_error "unknown arguments: $*" ;;
esac

sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
# The daemons this script started, one "name pid-file" line each: `stop` stops those and only those (on a shared
# host, other people's munged or slurmd are left alone). A daemon that was already running is not recorded.
started=/run/iclab-local-cluster.started

if [ "${1:-}" = "stop" ]; then
  [ -f "$started" ] || { echo "slurm: this script started no daemon here (no $started)" >&2; exit 0; }
  while read -r name pid_file; do
    pid=$(cat "$pid_file" 2>/dev/null || true)
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]; then
      $sudo_cmd kill "$pid" && echo "slurm: stopped $name ($pid)" >&2
    fi
  done < "$started"
  $sudo_cmd rm -f "$started"
  exit 0
fi

apt_ensure "slurm setup" slurm-wlm munge
# Starts daemon `name` (its pid file `pid_file`) with the command that follows, unless one is already running.
start_daemon() {
  local name=$1 pid_file=$2; shift 2
  pgrep -x "$name" >/dev/null && return 0
  "$@"
  echo "$name $pid_file" | $sudo_cmd tee -a "$started" >/dev/null
}

# munge: a key, its folders, the daemon
if [ ! -s /etc/munge/munge.key ]; then
  $sudo_cmd mkdir -p /etc/munge
  $sudo_cmd dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
$sudo_cmd mkdir -p /run/munge /var/lib/munge /var/log/munge
$sudo_cmd chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
$sudo_cmd chmod 0700 /etc/munge; $sudo_cmd chmod 0400 /etc/munge/munge.key
start_munged() { $sudo_cmd -u munge munged 2>/dev/null || $sudo_cmd munged --force; }
start_daemon munged /run/munge/munged.pid start_munged

# slurm.conf for one node: this host with all its CPUs and most of its memory
host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10 ))
conf_dir=/etc/slurm
$sudo_cmd mkdir -p "$conf_dir" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
$sudo_cmd tee "$conf_dir/slurm.conf" >/dev/null <<CONF
# Written by iclab scripts/slurm/local_cluster.sh: a single-node test cluster.
ClusterName=iclab-local
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmUser=root
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
start_daemon slurmctld /run/slurmctld.pid $sudo_cmd slurmctld
start_daemon slurmd /run/slurmd.pid $sudo_cmd slurmd
for _ in $(seq 1 30); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE 'idle|mixed|allocated'; then
    echo "slurm: single-node cluster up on $host ($cpus CPUs)" >&2; exit 0
  fi
  scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
  sleep 1
done
echo "slurm: the node did not come up; see /var/log/slurm/*.log" >&2
sinfo >&2 || true
exit 1
