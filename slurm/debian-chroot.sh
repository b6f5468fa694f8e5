#!/usr/bin/env bash
# slurm/debian-chroot.sh - a Debian tree of its own (13 "trixie": Slurm 24.11, or 12 "bookworm":
# Slurm 22.05) on this machine, to run the whole suite (tests/run.sh) and the fixture capture on
# either Slurm version with a private test cluster.
#
# Not run by CI. The machine's own test cluster uses the same ports (6817-6819, 17001-17003,
# 3306), so everything that runs daemons runs in a network namespace of its own (loopback only,
# no route out) and a PID + mount namespace of its own: its /run, /proc and daemons are invisible
# to the machine's cluster, and stopping the session ends every process started in it.
#
#   debian-chroot.sh create            debootstrap the suite into $ROOT (about 45 s)
#   debian-chroot.sh install           cluster.sh install + the Python deps, online (about 40 s)
#   debian-chroot.sh sync              copy this checkout (and ../shared) into $ROOT/work
#   debian-chroot.sh start             start the session: netns + PID/mount namespace
#   debian-chroot.sh exec CMD...       run CMD in the session, in the copied checkout (offline)
#   debian-chroot.sh online CMD...     run CMD in $ROOT with the network (apt, pip), no session
#   debian-chroot.sh pull DIR          copy DIR of the copied checkout back into this one
#   debian-chroot.sh stop              end the session (all its processes) and its netns
#   debian-chroot.sh test [ARGS...]    sync, start, a fresh cluster, `bash tests/run.sh ARGS`, stop
#
# DEB_SUITE=trixie (default) or bookworm chooses the tree (/work/deb13-root, /work/deb12-root;
# DEB_ROOT overrides). Example, the suite on 24.11 and the 24.11 fixtures into this checkout:
#   bash slurm/debian-chroot.sh create && bash slurm/debian-chroot.sh install
#   bash slurm/debian-chroot.sh test
#   bash slurm/debian-chroot.sh start
#   bash slurm/debian-chroot.sh exec 'bash slurm/cluster.sh down --purge; bash slurm/cluster.sh up && bash slurm/capture-fixtures.sh'
#   bash slurm/debian-chroot.sh pull tests/data/slurm/24.11 && bash slurm/debian-chroot.sh stop
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
readonly SCRIPT_DIR
readonly REPO=${SCRIPT_DIR%/slurm}
readonly SUITE=${DEB_SUITE:-trixie}
case $SUITE in
trixie) default_root=/work/deb13-root ;;
bookworm) default_root=/work/deb12-root ;;
*) printf '[chroot] ERROR: DEB_SUITE must be trixie or bookworm, not %s\n' "$SUITE" >&2; exit 2 ;;
esac
readonly ROOT=${DEB_ROOT:-$default_root}
readonly MIRROR=${DEB_MIRROR:-http://deb.debian.org/debian}
# Named after the tree, so that two trees (DEB_ROOT) can each have a session at once.
readonly NETNS=advisor-${ROOT##*/}
readonly SESSION=/run/advisor-${ROOT##*/}.session   # on the host: the PID of the session's PID 1
readonly WORK=/work/slurm-advisor             # the checkout's copy inside $ROOT
readonly WHEELS=/var/cache/advisor-wheels     # inside $ROOT: every wheel, for offline pip
# What a fresh Debian machine of this project has (python3, venv, git, procps...).
readonly BASE_PACKAGES=ca-certificates,python3,python3-venv,python3-pip,git,procps,iproute2,rsync,less
readonly PATH_IN=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { printf '[chroot %s] %s\n' "$SUITE" "$*" >&2; }
die() { printf '[chroot %s] ERROR: %s\n' "$SUITE" "$*" >&2; exit 1; }
timed() { # WHAT CMD...: run CMD, say how long it took
	local what=$1 t0=$SECONDS
	shift
	"$@"
	log "$what took $((SECONDS - t0)) s"
}

[[ $EUID -eq 0 ]] || die "must run as root"

# The mounts every use of the tree needs, made inside a private mount namespace so they vanish
# with it. Run by the namespace's first process, before it becomes the chroot.
mounts_script() {
	local _ dir type opts
	cat <<-EOF
		set -e
		mount --rbind /dev "$ROOT/dev"
		mount -t sysfs sysfs "$ROOT/sys"
		mount -t tmpfs -o mode=0755 tmpfs "$ROOT/run"
		mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
	EOF
	# The host's cgroup hierarchies, mounted afresh the same way, as a real machine has them
	# (SLURM_ADV_CGROUP=1 needs them; without cgroup.conf slurmd 24.11 would too).
	while read -r _ dir type opts _; do
		[[ $dir == /sys/fs/cgroup* ]] || continue
		case $type in
		tmpfs) printf 'mount -t tmpfs -o mode=0755 tmpfs %q\n' "$ROOT$dir" ;;
		cgroup | cgroup2)
			opts=$(tr ',' '\n' <<<"$opts" | { grep -vx 'rw\|relatime\|nosuid\|nodev\|noexec' || true; } | paste -sd, -)
			printf 'mkdir -p %q && mount -t %s -o %q %s %q\n' "$ROOT$dir" "$type" "${opts:-defaults}" "$type" "$ROOT$dir"
			;;
		esac
	done </proc/self/mounts
}

# root_argv CMD [ENV=VALUE...]: ROOT_ARGV = CMD run by bash in the chroot, with a clean
# environment (no host PATH, no pyenv shims) plus the given variables.
ROOT_ARGV=()
root_argv() {
	local cmd=$1
	shift
	ROOT_ARGV=(chroot "$ROOT" /usr/bin/env -i HOME=/root "PATH=$PATH_IN" LANG=C.UTF-8
		"TERM=${TERM:-dumb}" ${CI:+"CI=$CI"} "$@" /bin/bash -c "$cmd")
}

session_pid() {
	local pid
	[[ -r $SESSION ]] || return 1
	pid=$(<"$SESSION")
	[[ $pid =~ ^[1-9][0-9]*$ && -e /proc/$pid/ns/pid ]] || return 1
	# the recorded process must still be the session's PID 1 (a sleep in the chroot)
	[[ $(readlink "/proc/$pid/root") == "$ROOT" ]] || return 1
	printf '%s\n' "$pid"
}

cmd_create() {
	[[ -x /usr/sbin/debootstrap ]] || timed "apt-get install debootstrap" apt-get install -y --no-install-recommends debootstrap
	if [[ -x $ROOT/usr/bin/python3 ]]; then
		log "$ROOT exists already ($(cat "$ROOT/etc/debian_version")); delete it to start again"
		return 0
	fi
	install -d "$ROOT"
	timed "debootstrap $SUITE" debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$ROOT" "$MIRROR"
	# The sources of a real Debian machine: updates and security too.
	rm -f -- "$ROOT/etc/apt/sources.list"
	cat >"$ROOT/etc/apt/sources.list.d/debian.sources" <<-EOF
		Types: deb
		URIs: $MIRROR
		Suites: $SUITE $SUITE-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: http://deb.debian.org/debian-security
		Suites: $SUITE-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	trust_host_cas
	cmd_online 'apt-get update -q && apt-get -y -q upgrade'
}

# The machine's own certificate authorities (its HTTPS proxy for PyPI), as a real machine has them.
trust_host_cas() {
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		install -d "$ROOT/usr/local/share/ca-certificates"
		cp -- /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
		cmd_online 'update-ca-certificates >/dev/null'
	fi
}

cmd_online() { # CMD: with the network, without the session
	[[ -x $ROOT/bin/bash ]] || die "no tree at $ROOT: run '$0 create' first"
	root_argv "$1"
	unshare --mount --pid --fork --propagation private --mount-proc="$ROOT/proc" -- \
		bash -c "$(mounts_script)
exec $(printf '%q ' "${ROOT_ARGV[@]}")"
}

cmd_sync() {
	[[ -d $ROOT/usr ]] || die "no tree at $ROOT: run '$0 create' first"
	install -d "$ROOT$WORK" "$ROOT/work/shared"
	# .venv is the tree's own (its Debian's Python); fixtures captured inside are kept (see pull).
	rsync -a --delete --exclude=/.venv --exclude=/.git --exclude=__pycache__ --exclude='*.egg-info' \
		--exclude=/.mypy_cache --exclude=/.ruff_cache --exclude=/.pytest_cache -- "$REPO/" "$ROOT$WORK/"
	# The machine's own name resolution (munged looks up the host name).
	cp -- /etc/hosts "$ROOT/etc/hosts"
	if [[ -d $REPO/../shared ]]; then
		rsync -a --delete -- "$REPO/../shared/" "$ROOT/work/shared/"
	fi
	log "synced $REPO into $ROOT$WORK"
}

cmd_install() {
	cmd_sync
	trust_host_cas
	timed "cluster.sh install (apt)" cmd_online "cd $WORK && bash slurm/cluster.sh install"
	# tests/run.sh pip-installs the project every time; in the offline namespace it finds every
	# wheel (and setuptools for the editable build) here.
	timed "pip download" cmd_online "python3 -m pip download -q -d $WHEELS 'setuptools>=64' wheel && \
		cd $WORK && python3 -m pip download -q -d $WHEELS '.[test,plots]'"
	timed "venv" cmd_online "cd $WORK && { [[ -x .venv/bin/python ]] || python3 -m venv .venv; } && \
		.venv/bin/pip install -q --no-index --find-links=$WHEELS -e '.[test,plots]'"
}

cmd_start() {
	local holder=''
	if session_pid >/dev/null; then
		log "session already running (pid $(session_pid))"
		return 0
	fi
	[[ -x $ROOT/bin/bash ]] || die "no tree at $ROOT: run '$0 create' first"
	[[ -e /run/netns/$NETNS ]] || ip netns add "$NETNS"
	ip -n "$NETNS" link set lo up
	# Slurm 24.11 binds its listening sockets through getaddrinfo(AI_ADDRCONFIG), which finds
	# nothing when 127.0.0.1 is the only address ("Unable to resolve (null)"): give lo a second
	# loopback address, as any machine with a network interface has one address more.
	ip -n "$NETNS" addr add 127.0.0.2/8 dev lo 2>/dev/null || true
	# PID 1 of the session: makes the mounts, then sleeps in the chroot until stopped. It gets
	# none of our descriptors (a lock held by our caller must not live on in it).
	(
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			if [[ $fd =~ ^[0-9]+$ ]] && ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
		done
		exec setsid ip netns exec "$NETNS" unshare --mount --pid --fork --propagation private \
			--mount-proc="$ROOT/proc" -- bash -c "$(mounts_script)
exec chroot '$ROOT' /bin/sleep infinity"
	) </dev/null >/dev/null 2>&1 &
	local deadline=$((SECONDS + 10)) proc
	until [[ -n $holder ]]; do
		((SECONDS < deadline)) || die "the session did not start"
		sleep 0.1
		for proc in /proc/[0-9]*; do   # the process that is PID 1 of its namespace, in $ROOT
			if [[ $(readlink "$proc/root" 2>/dev/null) == "$ROOT" ]] &&
				grep -Eq '^NSpid:.*[[:space:]]1$' "$proc/status" 2>/dev/null; then
				holder=${proc#/proc/}
			fi
		done
	done
	printf '%s\n' "$holder" >"$SESSION"
	log "session started: pid $holder in netns $NETNS (no route out)"
}

cmd_exec() { # CMD: inside the session, in the copied checkout
	local pid
	pid=$(session_pid) || die "no session: run '$0 start' first"
	# Offline: pip takes everything from the wheel cache.
	root_argv "cd $WORK && $1" PIP_NO_INDEX=1 "PIP_FIND_LINKS=$WHEELS"
	nsenter --target "$pid" --mount --pid --net -- "${ROOT_ARGV[@]}"
}

cmd_stop() {
	local pid
	if pid=$(session_pid); then
		kill -KILL "$pid"   # PID 1 of the namespace: the kernel ends every process in it
		log "session $pid ended"
	fi
	rm -f -- "$SESSION"
	if [[ -e /run/netns/$NETNS ]]; then ip netns delete "$NETNS"; fi
}

cmd_pull() { # DIR: copy DIR (relative to the checkout) back out of the tree
	local dir=${1:?pull: which directory}
	[[ -d $ROOT$WORK/$dir ]] || die "no $dir in $ROOT$WORK"
	install -d "$REPO/$dir"
	rsync -a --delete -- "$ROOT$WORK/$dir/" "$REPO/$dir/"
	log "copied $dir out of the tree"
}

cmd_test() {
	cmd_sync
	cmd_start
	trap cmd_stop EXIT
	local args='' a
	for a in "$@"; do args+=" $(printf '%q' "$a")"; done
	# A fresh cluster, as on a new machine (no jobs of earlier runs in the accounting DB).
	cmd_exec "bash slurm/cluster.sh down --purge >/dev/null 2>&1 || true"
	timed "tests/run.sh$args" cmd_exec "bash tests/run.sh$args"
}

main() {
	local cmd=${1:-}
	(($#)) && shift
	case $cmd in
	create | install | sync | start | stop) "cmd_$cmd" ;;
	exec | online) (($#)) || die "$cmd: no command"; "cmd_$cmd" "$*" ;;
	pull) cmd_pull "$@" ;;
	test) cmd_test "$@" ;;
	*) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
	esac
}

main "$@"
