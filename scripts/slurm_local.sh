#!/usr/bin/env bash
# scripts/slurm_local.sh — a single-node Slurm cluster on this machine, for
# tests of trc-run under srun (test/Training/srun.test).
#
#   slurm_local.sh start DIR   start munged, slurmctld and slurmd with all
#                              their files (key, socket, config, state, logs)
#                              in DIR; prints the SLURM_CONF to export
#   slurm_local.sh stop DIR    stop them (by their pid files in DIR)
#
# The cluster is private to DIR: its own munge key and socket, free ports
# chosen at start, one node named after this host with 8 CPUs (more ranks
# than cores: the tests oversubscribe) and one partition. srun's default MPI
# plugin is PMIx (MpiDefault=pmix), the wire-up Open MPI's MPI_Init uses under
# srun. Preconditions: root (the daemons run as root, as SlurmUser), Debian's
# slurmctld, slurmd, slurm-client and munge (scripts/setup.sh installs them).
# Exit status 3 means Slurm is not installed here (the caller skips).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$(realpath -m "$2")

stop() {
  local f pid
  for f in slurmd.pid slurmctld.pid munge/munged.pid; do
    [ -f "$dir/$f" ] || continue
    pid=$(cat "$dir/$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/$f"
  done
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local missing=() b
  for b in munged slurmctld slurmd srun sinfo; do
    command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || missing+=("$b")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "slurm_local: cannot start a Slurm cluster: ${missing[*]} not installed" \
      "(scripts/setup.sh installs slurmctld, slurmd, slurm-client and munge)" >&2
    exit 3
  fi
  stop # a cluster left in DIR by an interrupted run
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
  chmod 700 "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  /usr/sbin/munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/seed"

  local host ctld_port d_port
  host=$(hostname -s)
  ctld_port=$(free_port)
  d_port=$(free_port)
  while [ "$d_port" = "$ctld_port" ]; do d_port=$(free_port); done
  cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm_local.sh: a one-node cluster for trc's tests.
ClusterName=trc-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# No cgroups in a container: process groups track a step's tasks.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
# The node's CPUs are what this file says, not what the machine has.
SlurmdParameters=config_overrides
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=trc Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  export SLURM_CONF="$dir/slurm.conf"
  /usr/sbin/slurmctld -i
  /usr/sbin/slurmd
  # Ready when the node is idle (slurmd registered with slurmctld).
  for _ in $(seq 100); do
    if [ "$(sinfo -h -o %t 2>/dev/null)" = "idle" ]; then
      echo "export SLURM_CONF=$dir/slurm.conf"
      return 0
    fi
    sleep 0.2
  done
  echo "slurm_local: the node did not become idle in 20 s; logs:" >&2
  tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" "$dir/munge/munged.log" >&2 || true
  stop
  exit 1
}

case "$action" in
start) start ;;
stop) stop ;;
*) usage ;;
esac
