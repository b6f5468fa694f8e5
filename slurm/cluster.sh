#!/usr/bin/env bash
# slurm/cluster.sh - a real, single-host Slurm test cluster for slurm-advisor.
#
# Debian 12 (Slurm 22.05) or Debian 13 (Slurm 24.11), as root, without systemd:
# every daemon is started by hand in the background. See slurm/README.md for the
# commands, what they touch, the environment variables and what differs between
# the two versions.
#
#   cluster.sh install                 apt-get install what is missing, init MariaDB, munge key
#   cluster.sh up                      write configs, start munged..slurmd, wait until ready
#   cluster.sh down [--purge]          stop what `up` started; --purge also wipes job state + DB
#   cluster.sh status                  which daemons run, sinfo
#   cluster.sh stop-daemon NAME        NAME = slurmctld | slurmdbd
#   cluster.sh start-daemon NAME       start it again and wait until it answers
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
readonly SCRIPT_DIR
readonly CONF_SRC="$SCRIPT_DIR/conf"
readonly LUA_SRC="$SCRIPT_DIR/job_submit.lua"

readonly STATE_DIR=${SLURM_ADV_STATE_DIR:-/run/slurm-advisor}
readonly WAIT=${SLURM_ADV_WAIT:-30}            # seconds for each readiness wait
readonly STOP_WAIT=${SLURM_ADV_STOP_WAIT:-20}  # seconds between TERM and KILL
readonly CGROUP=${SLURM_ADV_CGROUP:-1}  # memory enforced, as sites do (issue 33)
readonly LOCK_WAIT=${SLURM_ADV_LOCK_WAIT:-120} # seconds to wait for another cluster.sh

readonly CLUSTER=advisor
readonly ACCOUNT=research
# Every user the tests submit jobs as: with AccountingStorageEnforce=associations a user
# without an association is refused.
readonly USERS=(root nobody daemon slurm)
readonly NODES=(c1 c2 f1)
# lua5.1 is what Debian's job_submit_lua.so links (22.05 and 24.11); lua5.4 runs the plugin's unit
# tests too, as sites whose Slurm links Lua 5.4 run it.
readonly PACKAGES=(slurmctld slurmd slurm-client slurmdbd munge mariadb-server mariadb-client lua-cjson lua-filesystem lua5.1 lua5.4 zsh fish)  # zsh, fish: the shells the completion tests run

readonly SLURM_ETC=/etc/slurm
readonly MYSQL_CONF_D=/etc/mysql/mariadb.conf.d
readonly LOG_DIR=/var/log/slurm
readonly CTLD_STATE=/var/lib/slurm/slurmctld
readonly SLURMD_SPOOL=/var/lib/slurm/slurmd
readonly MYSQL_DATADIR=/var/lib/mysql
readonly POLICY_RC_D=/usr/sbin/policy-rc.d
readonly DB_NAME=slurm_acct_db
readonly DB_USER=slurm
readonly DB_PASS=slurmdbpass

[[ $WAIT =~ ^[0-9]+$ && $STOP_WAIT =~ ^[0-9]+$ && $LOCK_WAIT =~ ^[0-9]+$ ]] ||
	{ echo "cluster.sh: SLURM_ADV_WAIT, SLURM_ADV_STOP_WAIT and SLURM_ADV_LOCK_WAIT must be whole seconds" >&2; exit 2; }

# ---------------------------------------------------------------- helpers

log() { printf '[cluster] %s\n' "$*"; }
warn() { printf '[cluster] WARNING: %s\n' "$*" >&2; }
die() { printf '[cluster] ERROR: %s\n' "$*" >&2; exit 1; }

now_ms() {
	local t=${EPOCHREALTIME//[!0-9]/}   # microseconds, whatever the locale's decimal point
	printf '%s\n' "$((10#$t / 1000))"
}

fmt_ms() { printf '%d.%03d s' "$(($1 / 1000))" "$(($1 % 1000))"; }

PHASE_NAME=''
PHASE_T0=0
phase_begin() { PHASE_NAME=$1; PHASE_T0=$(now_ms); }
phase_end() {
	local note=${1:-} dt
	dt=$(($(now_ms) - PHASE_T0))
	printf '[cluster] phase %-22s %10s%s\n' "$PHASE_NAME" "$(fmt_ms "$dt")" "${note:+  ($note)}"
}

short_host() {
	local h
	h=$(uname -n)
	h=${h%%.*}
	[[ $h =~ ^[A-Za-z0-9][A-Za-z0-9-]*$ ]] || die "unusable short hostname '$h'"
	printf '%s\n' "$h"
}

# Daemon table. Names: munged mariadbd slurmdbd slurmctld slurmd-<node>.
pidfile_of() {
	case $1 in
	munged) echo /run/munge/munged.pid ;;
	mariadbd) echo /run/mysqld/mysqld.pid ;;
	slurmdbd) echo /run/slurm/slurmdbd.pid ;;
	slurmctld) echo /run/slurm/slurmctld.pid ;;
	slurmd-*) echo "/run/slurm/$1.pid" ;;
	*) die "unknown daemon '$1'" ;;
	esac
}

logfile_of() {
	case $1 in
	munged) echo /var/log/munge/munged.log ;;
	mariadbd) echo "$LOG_DIR/mariadbd.log" ;;
	slurmdbd) echo "$LOG_DIR/slurmdbd.log" ;;
	slurmctld) echo "$LOG_DIR/slurmctld.log" ;;
	slurmd-*) echo "$LOG_DIR/$1.log" ;;
	*) die "unknown daemon '$1'" ;;
	esac
}

comm_of() {
	case $1 in
	slurmd-*) echo slurmd ;;
	*) echo "$1" ;;
	esac
}

all_daemons() { printf '%s\n' munged mariadbd slurmdbd slurmctld "${NODES[@]/#/slurmd-}"; }

# proc_matches PID COMM: PID is a live (non-zombie) process whose comm is COMM.
# Debian's binaries sit behind /etc/alternatives (slurmctld-wlm, slurmd-wlm), so
# compare /proc/PID/comm, never /proc/PID/exe; accept the -wlm name as well.
proc_matches() {
	local pid=$1 want=$2 comm='' state=''
	[[ $pid =~ ^[1-9][0-9]*$ ]] || return 1
	{ read -r comm <"/proc/$pid/comm"; } 2>/dev/null || return 1
	[[ $comm == "$want" || $comm == "$want-wlm" ]] || return 1
	state=$(awk '/^State:/ { print $2; exit }' "/proc/$pid/status" 2>/dev/null) || return 1
	# PID 1 here does not reap orphans: a stopped daemon can stay <defunct>.
	[[ -n $state && $state != Z && $state != X ]]
}

read_pid() {
	local f=$1 pid=''
	[[ -r $f ]] || return 1
	pid=$(head -n 1 -- "$f" 2>/dev/null) || return 1
	pid=${pid//[!0-9]/}
	[[ -n $pid ]] || return 1
	printf '%s\n' "$pid"
}

# daemon_pid NAME: print the PID of the running daemon (its own PID file + comm).
daemon_pid() {
	local pid
	pid=$(read_pid "$(pidfile_of "$1")") || return 1
	proc_matches "$pid" "$(comm_of "$1")" || return 1
	printf '%s\n' "$pid"
}

# The installed Slurm as MAJOR*100+MINOR (2205, 2411), from `slurmctld -V`; 0 when not installed.
SLURM_MM=''
slurm_mm() {
	local v
	if [[ -z $SLURM_MM ]]; then
		SLURM_MM=0
		v=$(/usr/sbin/slurmctld -V 2>/dev/null) || v=''
		if [[ $v =~ ([0-9]+)\.([0-9]+)\.[0-9]+ ]]; then
			SLURM_MM=$((10#${BASH_REMATCH[1]} * 100 + 10#${BASH_REMATCH[2]}))
		fi
	fi
	printf '%s\n' "$SLURM_MM"
}

# Field 22 of /proc/PID/stat: when the process started (clock ticks since boot).
proc_starttime() {
	local stat=''
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	stat=${stat##*) }   # the command name, in parentheses, may contain spaces
	awk '{ print $20 }' <<<"$stat"
}

# PIDs of what this script started live in $STATE_DIR/<name>.pid (with their start times).
record_started() {
	install -d -m 0755 "$STATE_DIR"
	printf '%s %s\n' "$2" "$(proc_starttime "$2" 2>/dev/null || echo 0)" >"$STATE_DIR/$1.pid"
}
forget_started() { rm -f -- "$STATE_DIR/$1.pid"; }
# started_pid NAME: the PID of the NAME this script started. Slurm 23.11 and later restart
# slurmctld and slurmd on `scontrol reconfigure` (the old process execs a new one, which writes
# its PID to the pid file and goes on): a live daemon in the pid file that started after the
# one we recorded, which is gone, is that one's successor and is ours too.
started_pid() {
	local name=$1 pid start=0 now
	[[ -r $STATE_DIR/$name.pid ]] || return 1
	read -r pid start <"$STATE_DIR/$name.pid" || true
	[[ $pid =~ ^[1-9][0-9]*$ ]] || return 1
	if (($(slurm_mm) >= 2311)) && [[ $name == slurm* && $name != slurmdbd ]] &&
		! proc_matches "$pid" "$(comm_of "$name")" && now=$(daemon_pid "$name") &&
		[[ $now != "$pid" && $(proc_starttime "$now" || echo 0) -ge ${start:-0} ]]; then
		record_started "$name" "$now"
		pid=$now
	fi
	printf '%s\n' "$pid"
}

show_log_tail() {
	local f=$1
	if [[ -r $f ]]; then
		printf '[cluster] last lines of %s:\n' "$f" >&2
		tail -n 15 -- "$f" | sed 's/^/    /' >&2 || true
	fi
}

fail_daemon() { # NAME MESSAGE
	local logf outf
	logf=$(logfile_of "$1")
	outf="$LOG_DIR/${1}.out"   # the daemon's stdout/stderr (fatal config errors land here)
	if [[ -s $outf && $outf != "$logf" ]]; then
		printf '[cluster] ERROR: %s: %s; see %s and %s\n' "$1" "$2" "$logf" "$outf" >&2
		show_log_tail "$outf"
	else
		printf '[cluster] ERROR: %s: %s; see %s\n' "$1" "$2" "$logf" >&2
	fi
	show_log_tail "$logf"
	exit 1
}

# wait_ready NAME WHAT CMD...: poll CMD until it succeeds, at most $WAIT s.
# Fails early when the daemon's process has disappeared.
wait_ready() {
	local name=$1 what=$2 t0 deadline
	shift 2
	t0=$(now_ms)
	deadline=$((t0 + WAIT * 1000))
	until "$@" >/dev/null 2>&1; do
		if (($(now_ms) > t0 + 3000)) && [[ $name != nodes ]] && ! daemon_pid "$name" >/dev/null; then
			fail_daemon "$name" "process exited while waiting for $what"
		fi
		if (($(now_ms) >= deadline)); then
			if [[ $name == nodes ]]; then
				printf '[cluster] ERROR: nodes did not become ready (%s) within %s s; see %s and %s/slurmd-<node>.log\n' \
					"$what" "$WAIT" "$(logfile_of slurmctld)" "$LOG_DIR" >&2
				timeout 10 sinfo -N >&2 || true
				show_log_tail "$(logfile_of slurmctld)"
				exit 1
			fi
			fail_daemon "$name" "no answer to '$what' within $WAIT s"
		fi
		sleep 0.2
	done
}

# ---------------------------------------------------------------- readiness probes

ready_munged() { daemon_pid munged && munge -n </dev/null | unmunge; }
ready_mariadbd() { daemon_pid mariadbd && timeout 5 mariadb-admin ping; }
ready_slurmdbd() { daemon_pid slurmdbd && timeout 10 sacctmgr -n show cluster; }
ready_slurmctld() {
	local out
	daemon_pid slurmctld || return 1
	out=$(timeout 10 scontrol ping 2>&1) || return 1
	[[ $out == *'is UP'* ]]
}
ready_slurmd() { daemon_pid "$1"; }

# nodes_ready: every node is answering (idle, or running jobs resumed after a restart).
NODE_STATES=''
nodes_ready() {
	local out n st
	out=$(timeout 10 sinfo -h -N -o '%N %T') || return 1
	NODE_STATES=''
	for n in "${NODES[@]}"; do
		st=$(awk -v n="$n" '$1 == n { print $2; exit }' <<<"$out")
		case $st in
		idle | mixed | allocated | completing | planned) ;;   # planned: 24.11, kept for a pending job
		*) return 1 ;;
		esac
		NODE_STATES+="${NODE_STATES:+ }$n=$st"
	done
}

# ---------------------------------------------------------------- starters

# close_inherited_fds: close every descriptor above 2 of this (sub)shell. A caller may hold a
# lock on one (`flock /tmp/advisor-cluster.lock bash slurm/cluster.sh up` leaves it on fd 3,
# cluster.sh's own lock is fd 9): a daemon that inherited it would hold the lock for as long as
# it runs, and every other `flock` on it would wait forever.
close_inherited_fds() {
	local fd
	for fd in /proc/self/fd/*; do
		fd=${fd##*/}
		if [[ $fd =~ ^[0-9]+$ ]] && ((fd > 2)); then
			eval "exec $fd>&-" 2>/dev/null || true
		fi
	done
}

# Daemons get no stdio of ours (a caller reading our output through a pipe must see EOF) and
# no other descriptor of ours either (see close_inherited_fds).
start_munged() {
	install -d -o munge -g munge -m 0755 /run/munge
	(close_inherited_fds; exec runuser -u munge -- /usr/sbin/munged) </dev/null >>"$LOG_DIR/munged.out" 2>&1
}

start_mariadbd() {
	install -d -o mysql -g root -m 0755 /run/mysqld
	# mariadbd does not fork: run it in its own session, detached from our stdio.
	(close_inherited_fds; exec setsid /usr/sbin/mariadbd --user=mysql --pid-file=/run/mysqld/mysqld.pid) \
		</dev/null >>"$(logfile_of mariadbd)" 2>&1 &
	disown
}

start_slurmdbd() { (close_inherited_fds; exec /usr/sbin/slurmdbd) </dev/null >>"$LOG_DIR/slurmdbd.out" 2>&1; }
start_slurmctld() { (close_inherited_fds; exec /usr/sbin/slurmctld) </dev/null >>"$LOG_DIR/slurmctld.out" 2>&1; }
start_slurmd() { # NAME=slurmd-<node>
	local node=${1#slurmd-}
	install -d -m 0755 "$SLURMD_SPOOL/$node"
	(close_inherited_fds; exec /usr/sbin/slurmd -N "$node") </dev/null >>"$LOG_DIR/slurmd-$node.out" 2>&1
}

# ensure_daemon NAME WHAT READY-CMD...: start NAME unless it already runs, wait
# until READY-CMD succeeds, remember its PID if this script started it.
ensure_daemon() {
	local name=$1 what=$2 pid starter
	shift 2
	if pid=$(daemon_pid "$name"); then
		wait_ready "$name" "$what" "$@"
		if [[ $(started_pid "$name" 2>/dev/null || true) == "$pid" ]]; then
			ENSURE_NOTE="already running, pid $pid"
		else
			ENSURE_NOTE="already running, pid $pid, not started by cluster.sh"
		fi
		ENSURE_STARTED=0
		return 0
	fi
	forget_started "$name"
	starter=start_${name%%-*}
	if ! "$starter" "$name"; then
		fail_daemon "$name" "failed to start"
	fi
	wait_ready "$name" "$what" "$@"
	pid=$(daemon_pid "$name") || fail_daemon "$name" "no live process behind $(pidfile_of "$name")"
	record_started "$name" "$pid"
	ENSURE_NOTE="started, pid $pid"
	ENSURE_STARTED=1
}
ENSURE_NOTE=''
ENSURE_STARTED=0

phase_daemon() { # NAME WHAT READY-CMD...
	phase_begin "$1"
	ensure_daemon "$@"
	phase_end "$ENSURE_NOTE"
}

start_slurmctld_and_wait() { phase_daemon slurmctld 'scontrol ping' ready_slurmctld; }

# wait_nodes NUDGE: wait until every node answers. A freshly started slurmctld
# shows slurmds that were already running as "unknown" until its next ping
# (about 4 s); with NUDGE=1 a reconfigure makes them register at once.
wait_nodes() {
	if [[ $1 == 1 ]] && ! nodes_ready >/dev/null 2>&1; then
		timeout 10 scontrol reconfigure >/dev/null 2>&1 || true
		if (($(slurm_mm) >= 2311)); then   # slurmctld restarted itself: wait for the new one
			wait_ready slurmctld 'scontrol ping after reconfigure' ready_slurmctld
			started_pid slurmctld >/dev/null || true   # record the successor, if ours
		fi
	fi
	wait_ready nodes 'sinfo: all nodes idle' nodes_ready
}

# ---------------------------------------------------------------- stopping

# stop_pid NAME PID: TERM, bounded wait, then KILL.
stop_pid() {
	local name=$1 pid=$2 comm deadline t0
	comm=$(comm_of "$name")
	t0=$(now_ms)
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$((t0 + STOP_WAIT * 1000))
	while proc_matches "$pid" "$comm"; do
		if (($(now_ms) >= deadline)); then
			warn "$name (pid $pid) ignored TERM for $STOP_WAIT s; sending KILL"
			kill -KILL "$pid" 2>/dev/null || true
			deadline=$(($(now_ms) + 5000))
			while proc_matches "$pid" "$comm"; do
				(($(now_ms) < deadline)) || die "$name (pid $pid) survived KILL"
				sleep 0.1
			done
			break
		fi
		sleep 0.1
	done
	log "stopped $name (pid $pid) in $(fmt_ms $(($(now_ms) - t0)))"
}

# stop_started NAME: stop NAME only if this script started it.
stop_started() {
	local name=$1 pid running
	if ! pid=$(started_pid "$name"); then
		if running=$(daemon_pid "$name"); then
			log "$name (pid $running) was not started by cluster.sh; leaving it running"
		fi
		return 0
	fi
	if proc_matches "$pid" "$(comm_of "$name")"; then
		stop_pid "$name" "$pid"
	else
		log "$name (pid $pid) had already stopped"
	fi
	forget_started "$name"
}

# ---------------------------------------------------------------- configuration

CONF_CHANGED=()

# put_file TMP DEST MODE OWNER GROUP: install TMP as DEST only when the content differs.
put_file() {
	local tmp=$1 dest=$2 mode=$3 owner=$4 group=$5
	if [[ -f $dest ]] && cmp -s -- "$tmp" "$dest"; then
		chmod "$mode" -- "$dest"
		chown "$owner:$group" -- "$dest"
		rm -f -- "$tmp"
		return 0
	fi
	install -m "$mode" -o "$owner" -g "$group" -- "$tmp" "$dest"
	rm -f -- "$tmp"
	CONF_CHANGED+=("$dest")
	log "wrote $dest"
}

render() { # TEMPLATE -> stdout
	local host proctrack taskplugin gather
	host=$(short_host)
	if [[ $CGROUP == 1 ]]; then
		proctrack=proctrack/cgroup taskplugin=task/cgroup,task/affinity gather=jobacct_gather/cgroup
	else
		proctrack=proctrack/linuxproc taskplugin=task/none gather=jobacct_gather/linux
	fi
	sed -e "s|@HOST@|$host|g" -e "s|@PROCTRACK@|$proctrack|g" -e "s|@TASKPLUGIN@|$taskplugin|g" \
		-e "s|@JOBACCTGATHER@|$gather|g" -e "s|@DB_PASS@|$DB_PASS|g" -e "s|@DB_NAME@|$DB_NAME|g" -- "$1"
}

write_configs() {
	local tmp
	install -d -m 0755 "$SLURM_ETC" "$MYSQL_CONF_D"

	tmp=$(mktemp)
	render "$CONF_SRC/slurm.conf.in" >"$tmp"
	put_file "$tmp" "$SLURM_ETC/slurm.conf" 0644 root root

	tmp=$(mktemp)
	render "$CONF_SRC/slurmdbd.conf.in" >"$tmp"
	put_file "$tmp" "$SLURM_ETC/slurmdbd.conf" 0600 slurm slurm

	tmp=$(mktemp)
	cat -- "$CONF_SRC/99-slurm.cnf" >"$tmp"
	put_file "$tmp" "$MYSQL_CONF_D/99-slurm.cnf" 0644 root root

	# cgroup.conf: with SLURM_ADV_CGROUP=1 the enforcing one. Without it, 22.05 needs none, while
	# slurmd 23.02 and later initialise the cgroup plugin even with proctrack/linuxproc (and fail
	# where no cgroup fs is mounted), so they get CgroupPlugin=disabled.
	local cgroup_src=''
	if [[ $CGROUP == 1 ]]; then
		cgroup_src=$CONF_SRC/cgroup.conf
	elif (($(slurm_mm) >= 2302)); then
		cgroup_src=$CONF_SRC/cgroup-disabled.conf
	fi
	if [[ -n $cgroup_src ]]; then
		tmp=$(mktemp)
		if (($(slurm_mm) > 2205)); then
			grep -v '^CgroupAutomount=' -- "$cgroup_src" >"$tmp"   # "defunct" since 23.x
		else
			cat -- "$cgroup_src" >"$tmp"
		fi
		put_file "$tmp" "$SLURM_ETC/cgroup.conf" 0644 root root
	elif [[ -f $SLURM_ETC/cgroup.conf && $(head -n 1 -- "$SLURM_ETC/cgroup.conf") == '# cgroup.conf for the slurm-advisor test cluster'* ]]; then
		rm -f -- "$SLURM_ETC/cgroup.conf"   # ours, from an earlier SLURM_ADV_CGROUP=1 run
		CONF_CHANGED+=("$SLURM_ETC/cgroup.conf")
		log "removed $SLURM_ETC/cgroup.conf (SLURM_ADV_CGROUP is not 1)"
	fi

	tmp=$(mktemp)
	cat -- "$LUA_SRC" >"$tmp"
	put_file "$tmp" "$SLURM_ETC/job_submit.lua" 0644 root root
}

prepare_dirs() {
	install -d -o slurm -g slurm -m 0755 /run/slurm "$LOG_DIR" "$CTLD_STATE"
	install -d -m 0755 "$SLURMD_SPOOL" "$STATE_DIR"
	install -d -o munge -g munge -m 0755 /run/munge
	install -d -o mysql -g root -m 0755 /run/mysqld
}

require_installed() {
	local b missing=()
	for b in /usr/sbin/munged /usr/sbin/mariadbd /usr/sbin/slurmdbd /usr/sbin/slurmctld /usr/sbin/slurmd \
		/usr/bin/sacctmgr /usr/bin/sinfo /usr/bin/mariadb /usr/bin/mariadb-admin; do
		[[ -x $b ]] || missing+=("$b")
	done
	((${#missing[@]} == 0)) || die "not installed: ${missing[*]}; run '$0 install' first"
	[[ -s /etc/munge/munge.key ]] || die "no /etc/munge/munge.key; run '$0 install' first"
	[[ -d $MYSQL_DATADIR/mysql ]] || die "MariaDB data dir not initialised; run '$0 install' first"
}

# ---------------------------------------------------------------- accounting

create_db() {
	mariadb --batch <<-SQL
		CREATE DATABASE IF NOT EXISTS $DB_NAME;
		CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
		GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
	SQL
}

ensure_associations() {
	local assocs out added=()
	# One query answers all three: rows are cluster|account|user.
	assocs=$(sacctmgr -n -P show assoc format=cluster,account,user)
	if ! grep -F -- "$CLUSTER|" >/dev/null <<<"$assocs"; then
		sacctmgr -i add cluster "$CLUSTER" >/dev/null
		added+=("cluster $CLUSTER")
	fi
	if ! grep -Fx -- "$CLUSTER|$ACCOUNT|" >/dev/null <<<"$assocs"; then
		sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" \
			Description="slurm-advisor test account" Organization=advisor >/dev/null
		added+=("account $ACCOUNT")
	fi
	local user
	for user in "${USERS[@]}"; do
		id -u -- "$user" >/dev/null 2>&1 || continue
		if ! grep -Fx -- "$CLUSTER|$ACCOUNT|$user" >/dev/null <<<"$assocs"; then
			sacctmgr -i add user "$user" Account="$ACCOUNT" Cluster="$CLUSTER" >/dev/null
			added+=("user $user in $ACCOUNT")
		fi
		out=$(sacctmgr -n -P show user "$user" format=defaultaccount)
		if [[ $out != "$ACCOUNT" ]]; then
			sacctmgr -i modify user where name="$user" set DefaultAccount="$ACCOUNT" >/dev/null
			added+=("$user DefaultAccount=$ACCOUNT")
		fi
	done
	ASSOC_NOTE='nothing to add'
	if ((${#added[@]})); then
		ASSOC_NOTE="added $(printf '%s; ' "${added[@]}")"
		ASSOC_NOTE=${ASSOC_NOTE%; }
	fi
}
ASSOC_NOTE=''

# ---------------------------------------------------------------- commands

cmd_install() {
	local p missing=() created_policy=0 t0
	t0=$(now_ms)
	for p in "${PACKAGES[@]}"; do
		if [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true) != installed ]]; then
			missing+=("$p")
		fi
	done
	if ((${#missing[@]})); then
		log "installing: ${missing[*]}"
		if [[ ! -e $POLICY_RC_D ]]; then
			# Never let the packages' init scripts start services during the install.
			printf '#!/bin/sh\n# temporary, created by slurm-advisor slurm/cluster.sh install\nexit 101\n' >"$POLICY_RC_D"
			chmod 0755 "$POLICY_RC_D"
			created_policy=1
			trap 'rm -f -- "$POLICY_RC_D"' EXIT
		fi
		export DEBIAN_FRONTEND=noninteractive
		apt-get update
		apt-get install -y --no-install-recommends "${missing[@]}"
		if ((created_policy)); then
			rm -f -- "$POLICY_RC_D"
			trap - EXIT
		fi
		log "packages installed in $(fmt_ms $(($(now_ms) - t0)))"
	else
		log "all packages already installed: ${PACKAGES[*]}"
	fi

	if [[ ! -d $MYSQL_DATADIR/mysql ]]; then
		log "initialising the MariaDB data dir $MYSQL_DATADIR"
		install -d -o mysql -g mysql -m 0755 "$MYSQL_DATADIR"
		mariadb-install-db --user=mysql --datadir="$MYSQL_DATADIR" --skip-test-db >/dev/null
	fi
	if [[ ! -s /etc/munge/munge.key ]]; then
		log "creating /etc/munge/munge.key"
		install -d -o munge -g munge -m 0700 /etc/munge
		mungekey --create --keyfile=/etc/munge/munge.key
	fi
	chown munge:munge /etc/munge/munge.key
	chmod 0600 /etc/munge/munge.key
	log "install done in $(fmt_ms $(($(now_ms) - t0)))"
}

cmd_up() {
	local t0 name
	require_installed
	t0=$(now_ms)

	phase_begin configs
	prepare_dirs
	write_configs
	phase_end "${#CONF_CHANGED[@]} file(s) changed"

	phase_daemon munged 'munge -n | unmunge' ready_munged
	phase_daemon mariadbd 'mariadb-admin ping' ready_mariadbd

	phase_begin database
	create_db
	phase_end "$DB_NAME, user $DB_USER"

	phase_daemon slurmdbd 'sacctmgr -n show cluster' ready_slurmdbd

	phase_begin associations
	ensure_associations
	phase_end "$ASSOC_NOTE"

	if ((${#CONF_CHANGED[@]})) && daemon_pid slurmctld >/dev/null; then
		warn "configuration changed while slurmctld runs (${CONF_CHANGED[*]}); run 'down' then 'up' to apply it"
	fi
	start_slurmctld_and_wait
	local ctld_started=$ENSURE_STARTED slurmd_started=0

	phase_begin slurmd+nodes
	for name in "${NODES[@]/#/slurmd-}"; do
		ensure_daemon "$name" "pid file" ready_slurmd "$name"
		if ((ENSURE_STARTED)); then slurmd_started=1; fi
	done
	# Nudge only when slurmctld is new and every slurmd was already running.
	wait_nodes "$((ctld_started && !slurmd_started))"
	phase_end "$NODE_STATES"

	log "cluster '$CLUSTER' up in $(fmt_ms $(($(now_ms) - t0)))"
}

cancel_all_jobs() {
	local ids deadline
	daemon_pid slurmctld >/dev/null || return 0
	ids=$(timeout 10 squeue -h -o '%A' 2>/dev/null) || return 0
	[[ -n $ids ]] || return 0
	log "cancelling jobs: $(tr '\n' ' ' <<<"$ids")"
	# shellcheck disable=SC2086  # one argument per job id
	timeout 10 scancel $ids || true
	deadline=$(($(now_ms) + STOP_WAIT * 1000))
	while ids=$(timeout 10 squeue -h -o '%A' 2>/dev/null) && [[ -n $ids ]]; do
		(($(now_ms) < deadline)) || { warn "jobs still listed after $STOP_WAIT s: $(tr '\n' ' ' <<<"$ids")"; break; }
		sleep 0.2
	done
}

cmd_down() {
	local purge=0 t0 i name pid
	while (($#)); do
		case $1 in
		--purge) purge=1 ;;
		*) die "down: unknown option '$1'" ;;
		esac
		shift
	done
	t0=$(now_ms)
	if ((purge)); then
		cancel_all_jobs
	fi

	for ((i = ${#NODES[@]} - 1; i >= 0; i--)); do
		stop_started "slurmd-${NODES[i]}"
	done
	stop_started slurmctld
	stop_started slurmdbd

	if ((purge)); then
		for name in slurmctld slurmdbd; do
			if pid=$(daemon_pid "$name"); then
				die "--purge: $name (pid $pid) still runs and was not started by cluster.sh; stop it first"
			fi
		done
		log "purging slurmctld state ($CTLD_STATE), slurmd spool and the accounting database $DB_NAME"
		rm -rf -- "${CTLD_STATE:?}"/* "${SLURMD_SPOOL:?}"/*
		if ! daemon_pid mariadbd >/dev/null; then
			require_installed
			prepare_dirs
			phase_daemon mariadbd 'mariadb-admin ping' ready_mariadbd   # stopped again below
		fi
		mariadb --batch -e "DROP DATABASE IF EXISTS $DB_NAME"
	fi

	stop_started mariadbd
	stop_started munged
	log "down in $(fmt_ms $(($(now_ms) - t0)))"
}

cmd_status() {
	local name pid rc=0 who
	while read -r name; do
		if pid=$(daemon_pid "$name"); then
			who='external'
			if [[ $(started_pid "$name" 2>/dev/null || true) == "$pid" ]]; then
				who='started by cluster.sh'
			fi
			printf '%-10s running  pid %-8s %s\n' "$name" "$pid" "$who"
		else
			printf '%-10s stopped\n' "$name"
			rc=3
		fi
	done < <(all_daemons)
	if daemon_pid slurmctld >/dev/null; then
		echo
		timeout 10 sinfo || rc=3
	fi
	return "$rc"
}

check_daemon_arg() {
	case ${1:-} in
	slurmctld | slurmdbd) ;;
	*) die "expected slurmctld or slurmdbd, got '${1:-}'" ;;
	esac
}

cmd_stop_daemon() {
	local name=${1:-} pid
	check_daemon_arg "$name"
	if ! pid=$(daemon_pid "$name"); then
		log "$name is not running"
		forget_started "$name"
		return 0
	fi
	stop_pid "$name" "$pid"
	forget_started "$name"
}

cmd_start_daemon() {
	local name=${1:-}
	check_daemon_arg "$name"
	require_installed
	prepare_dirs
	case $name in
	slurmdbd) phase_daemon slurmdbd 'sacctmgr -n show cluster' ready_slurmdbd ;;
	slurmctld)
		start_slurmctld_and_wait
		phase_begin nodes
		wait_nodes "$ENSURE_STARTED"
		phase_end "$NODE_STATES"
		;;
	esac
}

# One cluster.sh at a time changes the cluster (test sessions may run side by side).
take_lock() {
	install -d -m 0755 "$STATE_DIR"
	exec 9>"$STATE_DIR/lock"
	if ! flock -w "$LOCK_WAIT" 9; then
		die "another cluster.sh has held $STATE_DIR/lock for more than $LOCK_WAIT s"
	fi
}

usage() {
	cat <<-EOF
		usage: $0 COMMAND
		  install              install missing packages (no services started), init MariaDB, munge key
		  up                   write configs, start munged, mariadbd, slurmdbd, slurmctld, slurmd x${#NODES[@]}
		  down [--purge]       stop what 'up' started; --purge also wipes slurmctld state and the accounting DB
		  status               show daemons and sinfo (exit 3 when something is not running)
		  stop-daemon NAME     stop slurmctld or slurmdbd
		  start-daemon NAME    start slurmctld or slurmdbd and wait until it answers
	EOF
}

main() {
	local cmd=${1:-}
	(($#)) && shift
	if [[ $cmd != '' && $cmd != help && $cmd != -h && $cmd != --help && $EUID -ne 0 ]]; then
		die "must run as root"
	fi
	case $cmd in
	install | up | down | stop-daemon | start-daemon) take_lock ;;
	*) ;;
	esac
	slurm_mm >/dev/null   # once, in this shell: the $(slurm_mm) calls below read it
	case $cmd in
	install) cmd_install "$@" ;;
	up) cmd_up "$@" ;;
	down) cmd_down "$@" ;;
	status) cmd_status "$@" ;;
	stop-daemon) cmd_stop_daemon "$@" ;;
	start-daemon) cmd_start_daemon "$@" ;;
	help | -h | --help) usage ;;
	*) usage >&2; exit 2 ;;
	esac
}

main "$@"
