#!/usr/bin/env bash
# A throw-away one-node SLURM cluster on this host, for tests and for trying docs/slurm.md.
#
# Usage: scripts/slurm/local-cluster.sh start  STATE_DIR   bring up munged, slurmctld, slurmd
#        scripts/slurm/local-cluster.sh stop   STATE_DIR   stop the daemons started in STATE_DIR
#        scripts/slurm/local-cluster.sh status STATE_DIR   sinfo of the running cluster
#        source STATE_DIR/env.sh                            point sbatch/squeue/... at it
#
# Everything lives under STATE_DIR (munge key and socket, slurm.conf, state and spool
# directories, pid files, logs); nothing under /etc, /run or /var is read or written, so it can
# run beside a system SLURM without touching it. Ports are picked free at start.
#
# Exit codes of `start`: 0 up and answering; 77 cannot run here (not root, packages missing:
# the reason is printed); 1 the daemons did not come up (their logs are printed).
# Needs the Debian packages slurmctld slurmd slurm-client munge (slurm-wlm-basic-plugins comes
# with them) and root: slurmd must start job steps as the submitting user.
set -euo pipefail

kSkip=77

die_skip() { echo "local-cluster: cannot run here: $*" >&2; exit "$kSkip"; }
die() { echo "local-cluster: $*" >&2; exit 1; }

usage() {
  echo "usage: $0 start|stop|status STATE_DIR" >&2
  exit 2
}

[ $# -eq 2 ] || usage
action="$1"
dir="$2"

# Kills the process recorded in a pid file and waits for it, so that a following start can
# reuse the ports and the state directory.
stop_pidfile() {
  local pidfile="$1" name="$2" pid
  [ -s "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "local-cluster: $name ($pid) ignored SIGTERM, killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
}

do_stop() {
  # Jobs still running would keep slurmstepd processes alive after slurmd is gone.
  if [ -f "$dir/env.sh" ] && [ -s "$dir/run/slurmctld.pid" ]; then
    # shellcheck disable=SC1091
    (source "$dir/env.sh" && timeout 10 scancel --full --user="$(id -un)" >/dev/null 2>&1) || true
    sleep 1
  fi
  stop_pidfile "$dir/run/slurmd.pid" slurmd
  stop_pidfile "$dir/run/slurmctld.pid" slurmctld
  stop_pidfile "$dir/munge/munged.pid" munged
}

# Two TCP ports nobody listens on now; a fixed 6817/6818 would collide with a system SLURM.
free_ports() {
  python3 - <<'EOF'
import socket
socks = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

print_logs() {
  for f in "$dir"/log/*.log; do
    [ -f "$f" ] || continue
    echo "----- $f (last 25 lines)" >&2
    tail -n 25 "$f" >&2
  done
}

do_start() {
  [ "$(id -u)" -eq 0 ] || die_skip "needs root (slurmd launches job steps as the submitting user)"
  local tool
  for tool in munged munge slurmctld slurmd sbatch squeue scontrol sinfo srun python3; do
    command -v "$tool" >/dev/null 2>&1 ||
      die_skip "'$tool' not found: apt-get install slurmctld slurmd slurm-client munge"
  done
  if [ -s "$dir/run/slurmctld.pid" ] && kill -0 "$(cat "$dir/run/slurmctld.pid")" 2>/dev/null; then
    die "a cluster is already running in $dir: stop it first"
  fi

  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  # munged refuses key and socket directories that other users can write to.
  chmod 0755 "$dir"
  rm -rf "$dir/state" "$dir/spool" "$dir/log" "$dir/run" "$dir/munge"
  mkdir -p "$dir/state" "$dir/spool/slurmd" "$dir/log" "$dir/run" "$dir/munge"
  chmod 0755 "$dir/munge"

  # --- munge: its own key and socket, so no system munged is needed or disturbed.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge/munge.key"
  local sock="$dir/munge/munge.socket.2"
  # --force: munged otherwise refuses to start when it thinks another munged owns the socket
  # or when a parent directory (/tmp) is world-writable.
  if ! munged --force --key-file="$dir/munge/munge.key" --socket="$sock" \
       --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
       --seed-file="$dir/munge/munged.seed" 2>"$dir/log/munged.stderr"; then
    cat "$dir/log/munged.stderr" >&2
    die_skip "munged would not start"
  fi
  for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
  if ! munge -S "$sock" -n | unmunge -S "$sock" >/dev/null 2>&1; then
    print_logs
    do_stop
    die_skip "munge credentials do not round-trip through $sock"
  fi

  # --- slurm.conf from what this host really has. slurmd -C reports sockets/cores/threads the
  # way slurmd will see them; a mismatch would drain the node ("Low socket*core*thread count").
  local host node_line mem ports ctld_port slurmd_port
  host="$(hostname -s)"
  node_line="$(slurmd -C | head -n 1)"
  [[ "$node_line" == NodeName=* ]] || die "slurmd -C printed '$node_line'"
  mem="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node_line")"
  # Leave room for the OS: a node whose RealMemory exceeds what slurmd measures is drained.
  mem=$(( mem > 2048 ? mem - 1024 : mem / 2 ))
  node_line="$(sed -e "s/RealMemory=[0-9]*/RealMemory=$mem/" -e "s/^NodeName=[^ ]*/NodeName=$host/" \
               <<<"$node_line")"
  read -r ctld_port slurmd_port < <(free_ports)

  cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm/local-cluster.sh for a one-node test cluster; do not edit.
ClusterName=attndevlocal
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/slurmd
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
# No cgroups: containers and CI runners rarely delegate a writable cgroup tree.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
# Finished jobs stay visible to squeue/scontrol for 10 minutes: there is no accounting (sacct).
MinJobAge=600
# Seconds between SIGTERM and SIGKILL on scancel or at the time limit; attndev needs one point.
KillWait=10
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
$node_line State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  : >"$dir/plugstack.conf"
  cat >"$dir/env.sh" <<EOF
# source this file to talk to the cluster in $dir
export SLURM_CONF=$dir/slurm.conf
EOF
  export SLURM_CONF="$dir/slurm.conf"

  if ! slurmctld -f "$SLURM_CONF" 2>"$dir/log/slurmctld.stderr"; then
    cat "$dir/log/slurmctld.stderr" >&2
    print_logs
    do_stop
    die "slurmctld would not start"
  fi
  if ! slurmd -f "$SLURM_CONF" -N "$host" 2>"$dir/log/slurmd.stderr"; then
    cat "$dir/log/slurmd.stderr" >&2
    print_logs
    do_stop
    die "slurmd would not start"
  fi

  # Up means: the node registered and is idle (not down/drained), so a job can start now.
  local state=""
  for _ in $(seq 150); do
    state="$(sinfo -h -N -n "$host" -o %T 2>/dev/null || true)"
    [ "$state" = "idle" ] && break
    sleep 0.2
  done
  if [ "$state" != "idle" ]; then
    echo "local-cluster: node $host is '${state:-unreachable}' after 30 s" >&2
    scontrol show node "$host" >&2 2>/dev/null || true
    print_logs
    do_stop
    die "the cluster did not come up"
  fi
  echo "local-cluster: up in $dir (node $host, ports $ctld_port/$slurmd_port)" >&2
}

case "$action" in
  start) do_start ;;
  stop) do_stop ;;
  status)
    # shellcheck disable=SC1091
    source "$dir/env.sh"
    sinfo -N -l
    ;;
  *) usage ;;
esac
