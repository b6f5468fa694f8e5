#!/usr/bin/env bash
# slurm/capture-fixtures.sh - run real jobs on the test cluster (slurm/cluster.sh up)
# and capture real Slurm outputs as test fixtures (default: tests/data/slurm/<MAJOR.MINOR>/,
# the installed Slurm's version, e.g. tests/data/slurm/24.11/; a directory argument overrides).
#
# Every fixture starts with '# ' header lines (Slurm version, exact command,
# date, exit code, elapsed time), followed by the raw output unchanged: stdout
# for *.txt, stderr for *.stderr.txt (the other stream, if any, is quoted in
# the header).
#
# Takes about 2 minutes (one TIMEOUT job needs its 1-minute limit). It stops
# and restarts slurmdbd and slurmctld (through cluster.sh) to capture the
# errors clients give while they are down: on a shared cluster run it under
# the cluster lock (flock /tmp/advisor-cluster.lock bash slurm/capture-fixtures.sh).
# Start from `cluster.sh down --purge && cluster.sh up` to get small job ids.
#
# One job is named "two<newline>lines": its sacct rows break every `sacct --parsable2` reader
# (whatever the delimiter) for any time window that holds it. On a cluster that other people's
# tests use, set SLURM_ADV_CAPTURE_SHARED=1 to leave it out (slurm/debian-chroot.sh gives a
# private cluster of either version instead).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
readonly SCRIPT_DIR
readonly CLUSTER_SH="$SCRIPT_DIR/cluster.sh"
VERSION=$(sinfo --version)   # "slurm-wlm 24.11.5" (Debian) or "slurm 24.11.5"
readonly VERSION
[[ $VERSION =~ ([0-9]+\.[0-9]+)\.[0-9]+ ]] || { echo "[capture] ERROR: no version in '$VERSION'" >&2; exit 1; }
OUT=${1:-"$SCRIPT_DIR/../tests/data/slurm/${BASH_REMATCH[1]}"}
mkdir -p -- "$OUT"
OUT=$(cd -- "$OUT" && pwd)
readonly OUT
readonly JOBS="$OUT/jobs_submitted.tsv"
readonly SHARED=${SLURM_ADV_CAPTURE_SHARED:-0}

readonly FMT=JobIDRaw,JobID,JobName,User,Account,Partition,NodeList,AllocCPUS,ReqMem,Elapsed,ElapsedRaw,Timelimit,TimelimitRaw,State,ExitCode,Submit,Start,End,Comment,Cluster
readonly SINFO_FMT='%N|%P|%T|%c|%m|%f'
readonly SQUEUE_FMT='%i|%j|%u|%a|%P|%T|%M|%l|%D|%C|%m|%R'

log() { printf '[capture] %s\n' "$*" >&2; }
die() { printf '[capture] ERROR: %s\n' "$*" >&2; exit 1; }

now_ms() {
	local t=${EPOCHREALTIME//[!0-9]/}
	printf '%s\n' "$((10#$t / 1000))"
}
fmt_ms() { printf '%d.%03d s' "$(($1 / 1000))" "$(($1 % 1000))"; }

# quote_cmd ARG...: the command as one could type it again.
quote_cmd() {
	local a out=() safe='^[][A-Za-z0-9_./:=,%@+-]+$'
	for a in "$@"; do
		if [[ $a =~ $safe ]]; then
			out+=("$a")
		elif [[ $a != *"'"* && $a =~ ^[[:print:]]+$ ]]; then
			out+=("'$a'")
		else
			out+=("$(printf '%q' "$a")")
		fi
	done
	printf '%s\n' "${out[*]}"
}

NOTE=''   # extra header lines for the next capture (newline separated)

# capture FILE STREAM CMD...: run CMD (bounded), write headers and the raw
# STREAM (stdout|stderr) to $OUT/FILE.
capture() {
	local file=$1 stream=$2 so se t0 ms date rc=0 other line
	shift 2
	so=$(mktemp)
	se=$(mktemp)
	date=$(date --iso-8601=seconds)
	t0=$(now_ms)
	timeout 600 "$@" >"$so" 2>"$se" || rc=$?
	ms=$(($(now_ms) - t0))
	{
		printf '# slurm version: %s (from sinfo --version)\n' "$VERSION"
		printf '# command: %s\n' "$(quote_cmd "$@")"
		printf '# date: %s\n' "$date"
		printf '# exit code: %d\n' "$rc"
		printf '# elapsed: %s\n' "$(fmt_ms "$ms")"
		if [[ -n $NOTE ]]; then
			while IFS= read -r line; do printf '# note: %s\n' "$line"; done <<<"$NOTE"
		fi
		if [[ $stream == stdout ]]; then other=$se; else other=$so; fi
		if [[ -s $other ]]; then
			while IFS= read -r line || [[ -n $line ]]; do
				printf '# %s: %s\n' "$([[ $stream == stdout ]] && echo stderr || echo stdout)" "$line"
			done <"$other"
		else
			printf '# %s: (empty)\n' "$([[ $stream == stdout ]] && echo stderr || echo stdout)"
		fi
		printf '# below: %s, unchanged\n' "$stream"
		if [[ $stream == stdout ]]; then cat -- "$so"; else cat -- "$se"; fi
	} >"$OUT/$file"
	rm -f -- "$so" "$se"
	NOTE=''
	log "$file: rc=$rc in $(fmt_ms "$ms")"
}

LAST_ID=''
# submit PURPOSE [runuser -u USER --] sbatch ARGS...
submit() {
	local purpose=$1 out
	shift
	out=$("$@")
	LAST_ID=${out%%;*}
	printf '%s\t%s\t%s\n' "$LAST_ID" "$purpose" "$(quote_cmd "$@")" >>"$JOBS"
	log "submitted $LAST_ID ($purpose)"
}

job_state() { squeue -h -j "$1" -o '%T' 2>/dev/null || true; }

wait_for() { # SECONDS DESCRIPTION CMD...
	local secs=$1 what=$2 deadline
	shift 2
	deadline=$(($(now_ms) + secs * 1000))
	until "$@"; do
		(($(now_ms) < deadline)) || die "timed out after $secs s waiting for $what"
		sleep 0.2
	done
}

is_running() { [[ $(job_state "$1") == RUNNING ]]; }
queue_empty() { [[ -z $(squeue -h -o '%A') ]]; }
# Final: no RUNNING/PENDING rows, and no row still in flight (JobName=allocation or empty Partition).
sacct_final() {
	local rows
	# JobName last: a name with a newline continues on a line of its own (NF < 4), skipped here.
	rows=$(sacct -a -X --parsable2 --noheader --delimiter=$'\x1f' --format=JobID,Partition,State,JobName -S "$START") || return 1
	! awk -F $'\x1f' 'NF >= 4 && ($4 == "allocation" || $2 == "" || $3 == "RUNNING" || $3 == "PENDING") { bad = 1 } END { exit !bad }' <<<"$rows"
}

CTLD_STOPPED=0
DBD_STOPPED=0
restore() {
	if ((DBD_STOPPED)); then bash "$CLUSTER_SH" start-daemon slurmdbd >&2 || true; fi
	if ((CTLD_STOPPED)); then bash "$CLUSTER_SH" start-daemon slurmctld >&2 || true; fi
}
trap restore EXIT

main() {
	local work inflight cancel_id pending_id array_id deadline_id data t_end
	scontrol ping | grep 'is UP' >/dev/null || die "cluster is not up: run slurm/cluster.sh up"
	work=$(mktemp -d /tmp/slurm-advisor-capture.XXXXXX)
	cd -- "$work"   # job output files (slurm-N.out) land here
	log "writing fixtures to $OUT (job output in $work)"
	printf 'jobid\tpurpose\tcommand\n' >"$JOBS"

	# ---- cluster shape (idle cluster)
	capture sinfo_nodes.txt stdout sinfo -N -h -o "$SINFO_FMT"
	capture sinfo.json stdout sinfo --json
	capture scontrol_show_partition.txt stdout scontrol show partition -o
	capture scontrol_show_node.txt stdout scontrol show node -o
	for p in cpu long fat; do
		capture "sbatch_test_only_$p.stderr.txt" stderr sbatch --test-only -p "$p" -t 00:05:00 -c 4 --mem=1G --wrap true
	done
	for p in cpu long; do
		capture "sbatch_test_only_${p}_c2.stderr.txt" stderr sbatch --test-only -p "$p" -t 00:05:00 -c 2 --mem=1G --wrap true
	done
	capture sbatch_parsable.txt stdout sbatch --parsable -p cpu -t 00:01:00 -J parsable --wrap true

	START=$(date -d '-5 seconds' +%Y-%m-%dT%H:%M:%S)
	readonly START

	# ---- a short job whose sacct row is caught "in flight": poll sacct every
	# 0.1 s from submission until the row is final, keep every distinct row.
	submit inflight-probe sbatch --parsable -p cpu -t 5 -J inflight-probe --wrap 'sleep 1'
	inflight=$LAST_ID
	local caught=0 deadline t0 prev='' seq
	seq=$(mktemp)
	t0=$(now_ms)
	deadline=$((t0 + 40000))
	while (($(now_ms) < deadline)); do
		data=$(sacct -a -X --parsable2 --noheader --format="$FMT" -j "$inflight")
		if [[ $data != "$prev" ]]; then
			printf '# +%s after sbatch returned\n%s\n' "$(fmt_ms $(($(now_ms) - t0)))" "$data" >>"$seq"
			prev=$data
		fi
		if ((!caught)) && [[ -n $data ]] && awk -F'|' '$3 == "allocation" || $6 == "" { f = 1 } END { exit !f }' <<<"$data"; then
			NOTE="polled every 0.1 s from submission; the first row seen with JobName=allocation / empty Partition"
			capture sacct_inflight.txt stdout sacct -a -X --parsable2 --noheader --format="$FMT" -j "$inflight"
			# The row may have moved on between the poll and the capture: keep it only if still in flight.
			if awk -F'|' '!/^# / && ($3 == "allocation" || $6 == "") { f = 1 } END { exit !f }' "$OUT/sacct_inflight.txt"; then
				caught=1
			fi
		fi
		# Stop once the row is final (COMPLETED with its real name and partition).
		if [[ $data == *'|inflight-probe|root|'*'|cpu|'*'|COMPLETED|'* ]]; then break; fi
		sleep 0.1
	done
	{
		printf '# slurm version: %s (from sinfo --version)\n' "$VERSION"
		printf '# command: %s   (repeated every 0.1 s)\n' "$(quote_cmd sacct -a -X --parsable2 --noheader --format="$FMT" -j "$inflight")"
		printf '# date: %s\n' "$(date --iso-8601=seconds)"
		printf '# note: every distinct stdout seen for job %s, from submission until its row was final;\n' "$inflight"
		printf '# note: each snapshot is preceded by a "# +T s" line giving when it was first seen\n'
		cat -- "$seq"
	} >"$OUT/sacct_inflight_sequence.txt"
	rm -f -- "$seq"
	if ((caught)); then
		log "caught job $inflight in flight"
	else
		rm -f -- "$OUT/sacct_inflight.txt"
		log "did not catch job $inflight in flight; see sacct_inflight_sequence.txt"
	fi
	wait_for 30 "job $inflight final in sacct" sacct_final
	capture sacct_inflight_final.txt stdout sacct -a -X --parsable2 --noheader --format="$FMT" -j "$inflight"

	# ---- the job mix
	submit completed-cpu sbatch --parsable -p cpu -t 5 --mem=200M -J done-cpu --wrap 'sleep 2'
	submit completed-long sbatch --parsable -p long -t 30 -J done-long --wrap 'sleep 2'
	submit completed-fat sbatch --parsable -p fat -t 10 -c 4 --mem=1G -J done-fat --wrap 'sleep 2'
	submit failed-exit-3 sbatch --parsable -p cpu -t 5 -J fail-exit3 --wrap 'sleep 1; exit 3'
	submit timeout sbatch --parsable -p cpu -t 1 -J timeout-1min --wrap 'sleep 300'
	submit cancelled-while-running sbatch --parsable -p long -t 10 -J cancel-running --wrap 'sleep 300'
	cancel_id=$LAST_ID
	# shellcheck disable=SC2016  # $SLURMD_NODENAME expands inside the job
	submit two-nodes sbatch --parsable -p cpu -N 2 --ntasks-per-node=1 -t 5 -J two-node --wrap 'srun bash -c "echo \$SLURMD_NODENAME"; sleep 1'
	submit comment-with-spaces sbatch --parsable -p cpu -t 5 -J comment-spaces --comment 'predicted 12 min by advisor (p90, n=40)' --wrap 'sleep 1'
	submit timelimit-days sbatch --parsable -p long -t 2-00:00:00 -J long-2d --wrap 'sleep 1'
	submit pipe-in-name-and-comment sbatch --parsable -p cpu -t 5 -J 'name|with|pipe' --comment 'comment|with|pipe' --wrap 'sleep 1'
	submit mem-per-cpu sbatch --parsable -p fat -t 10 -c 2 --mem-per-cpu=750M -J mem-per-cpu --wrap 'sleep 1'
	submit job-array sbatch --parsable -p cpu -t 5 --array=1-2 -J array --wrap 'sleep 1'
	submit failed-by-signal sbatch --parsable -p cpu -t 5 -J killed-by-signal --wrap 'kill -9 $$'
	submit no-association runuser -u nobody -- sbatch --parsable -D /tmp -o /dev/null -p cpu -t 5 -J no-assoc --wrap 'sleep 1'
	submit defaults-no-p-no-t sbatch --parsable -J defaults --wrap 'sleep 1'
	submit cancelled-while-pending sbatch --parsable -p fat -t 5 --begin=now+3600 -J pending-begin --wrap true
	pending_id=$LAST_ID
	if [[ $SHARED != 1 ]]; then
		submit newline-in-name sbatch --parsable -p cpu -t 5 -J $'two\nlines' --wrap 'sleep 1'
	fi
	# One task at a time (%1): while task 1 runs, sacct shows the remainder as ID_[2-3] PENDING.
	submit array-pending-remainder sbatch --parsable -p fat -t 5 --array=1-3%1 -J array-throttled --wrap 'sleep 300'
	array_id=$LAST_ID
	# Both c nodes whole: not before the TIMEOUT job ends (about 80 s), after its deadline: slurmctld
	# ends it as DEADLINE without it ever starting (22.05 does so only for a job that could run
	# but for resources; not for a held one, nor one waiting on a dependency).
	submit deadline-while-pending sbatch --parsable -p long -N 2 -c 2 -t 1 --deadline=now+70 -J deadline-pending --wrap true
	deadline_id=$LAST_ID

	wait_for 60 "job $cancel_id running" is_running "$cancel_id"
	wait_for 60 "array task ${array_id}_1 running" is_running "${array_id}_1"
	sleep 1
	# ---- snapshots while jobs run / pend
	NOTE="snapshot while jobs run (RUNNING rows have End=Unknown) and job $pending_id pends (--begin)"
	capture sacct_running.txt stdout sacct -a -X --parsable2 --noheader --format="$FMT" -S "$START"
	NOTE="the same moment as sacct_running.txt"
	capture sacct_running.json stdout sacct --json -a -S "$START"
	NOTE="array $array_id (--array=1-3%1): task 1 RUNNING, the remainder ${array_id}_[2-3] PENDING"
	capture sacct_array_pending.txt stdout sacct -a -X --parsable2 --noheader --format="$FMT" -j "$array_id"
	NOTE="the same moment as sacct_array_pending.txt"
	capture sacct_array_pending.json stdout sacct --json -a -j "$array_id"
	capture squeue.txt stdout squeue -a -h -o "$SQUEUE_FMT"
	capture squeue.json stdout squeue --json
	capture sinfo_nodes_busy.txt stdout sinfo -N -h -o "$SINFO_FMT"

	capture scancel_running.txt stdout scancel "$cancel_id"
	capture scancel_pending.txt stdout scancel "$pending_id"
	NOTE="the whole array: task 1 while RUNNING, the remainder ${array_id}_[2-3] while PENDING"
	capture scancel_array.txt stdout scancel "$array_id"

	log "waiting for all jobs to end (the TIMEOUT job takes about 70 s)"
	wait_for 240 "all jobs to leave squeue" queue_empty
	t_end=$(now_ms)
	wait_for 60 "all sacct rows final" sacct_final
	log "sacct final $(fmt_ms $(($(now_ms) - t_end))) after the queue emptied"

	# ---- accounting captures
	capture sacct_allocations.txt stdout sacct -a -X --parsable2 --noheader --format="$FMT" -S "$START"
	capture sacct_steps.txt stdout sacct -a --parsable2 --noheader --format="$FMT" -S "$START"
	NOTE="delimiter is the byte 0x1f (ASCII unit separator); no '|' inside a field can break the split"
	capture sacct_allocations_x1f.txt stdout sacct -a -X --parsable2 --noheader --delimiter=$'\x1f' --format="$FMT" -S "$START"
	capture sacct_header.txt stdout sacct -a -X --parsable2 --format="$FMT" -S "$START" -j "$inflight"
	capture sacct.json stdout sacct --json -a -S "$START"
	NOTE="job $pending_id was cancelled while pending with --begin in the future: it is missing from the -S $START queries above, only -j finds it"
	capture sacct_cancelled_pending.txt stdout sacct -a -X --parsable2 --noheader --format="$FMT" -j "$pending_id"
	NOTE="jobs that never started: $pending_id cancelled while pending, ${array_id}_[2-3] cancelled while pending, $deadline_id ended by its --deadline while pending"
	capture sacct_never_started.txt stdout sacct -a -X --parsable2 --noheader --format="$FMT" -j "$pending_id,$array_id,$deadline_id"
	NOTE="the same jobs as sacct_never_started.txt"
	capture sacct_never_started.json stdout sacct --json -a -j "$pending_id,$array_id,$deadline_id"
	capture sacct_no_such_job.txt stdout sacct -a -X --parsable2 --noheader --format="$FMT" -j 999999

	# ---- idle cluster again
	capture sinfo_nodes_idle_after.txt stdout sinfo -N -h -o "$SINFO_FMT"

	# ---- rejections with the cluster up
	capture sbatch_time_over_max.stderr.txt stderr sbatch -p cpu -t 2-00:00:00 --wrap true
	capture sbatch_no_such_partition.stderr.txt stderr sbatch -p nosuch --wrap true
	capture sacct_bad_format.stderr.txt stderr sacct -a -X --parsable2 --noheader --format=JobID,NoSuchField -S "$START"
	capture scontrol_show_job_invalid.stderr.txt stderr scontrol show job 999999
	capture squeue_invalid_job.stderr.txt stderr squeue -h -j 999999

	# ---- slurmdbd stopped
	bash "$CLUSTER_SH" stop-daemon slurmdbd >&2
	DBD_STOPPED=1
	capture dbd_down_sacct.stderr.txt stderr sacct -a -X --parsable2 --noheader --format="$FMT" -S "$START"
	NOTE="slurmdbd stopped: slurmctld keeps accepting jobs and queues the accounting records"
	capture dbd_down_sbatch.txt stdout sbatch --parsable -p cpu -t 1 -J dbd-down --wrap true
	bash "$CLUSTER_SH" start-daemon slurmdbd >&2
	DBD_STOPPED=0

	# ---- slurmctld stopped
	bash "$CLUSTER_SH" stop-daemon slurmctld >&2
	CTLD_STOPPED=1
	capture ctld_down_sbatch.stderr.txt stderr sbatch --parsable -p cpu -t 00:05:00 --wrap true
	capture ctld_down_sinfo.stderr.txt stderr sinfo -N -h -o "$SINFO_FMT"
	capture ctld_down_scontrol_show_partition.stderr.txt stderr scontrol show partition -o
	capture ctld_down_squeue.stderr.txt stderr squeue -a -h -o "$SQUEUE_FMT"
	capture ctld_down_scontrol_ping.txt stdout scontrol ping
	NOTE="slurmctld stopped, slurmdbd up: sacct still answers"
	capture ctld_down_sacct.txt stdout sacct -a -X --parsable2 --noheader --format="$FMT" -S "$START" -j "$inflight"
	bash "$CLUSTER_SH" start-daemon slurmctld >&2
	CTLD_STOPPED=0

	log "done; job output files are in $work"
}

main "$@"
