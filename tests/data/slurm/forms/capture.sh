#!/usr/bin/env bash
# tests/data/slurm/forms/capture.sh - sacct output in the forms sites keep it (issue #15) and
# jobs named with every line separator (issue #16, finding 3), captured from the real test
# cluster into this directory, in the header format of slurm/capture-fixtures.sh
# (tests/helpers/captures.py reads it).  Run it under the cluster lock:
#
#   flock /tmp/advisor-cluster.lock bash tests/data/slurm/forms/capture.sh
#
# It submits 14 short jobs (about 30 s) and changes nothing else; other users' jobs do not
# show up (every query names the job ids).
set -euo pipefail
export LC_ALL=C.UTF-8  # $'\u2028' is UTF-8 only in a UTF-8 locale

OUT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
readonly OUT
VERSION=$(sinfo --version)
readonly VERSION
NOTE=''

log() { printf '[capture] %s\n' "$*" >&2; }

# capture FILE CMD...: run CMD, write the header lines and its raw stdout to $OUT/FILE.
capture() {
	local file=$1 so se rc=0 date
	shift
	so=$(mktemp)
	se=$(mktemp)
	date=$(date --iso-8601=seconds)
	"$@" >"$so" 2>"$se" || rc=$?
	{
		printf '# slurm version: %s (from sinfo --version)\n' "$VERSION"
		printf '# command: %s\n' "$(printf '%q ' "$@" | sed 's/ $//')"
		printf '# date: %s\n' "$date"
		printf '# exit code: %d\n' "$rc"
		if [[ -n $NOTE ]]; then
			while IFS= read -r line; do printf '# note: %s\n' "$line"; done <<<"$NOTE"
		fi
		if [[ -s $se ]]; then
			while IFS= read -r line || [[ -n $line ]]; do printf '# stderr: %s\n' "$line"; done <"$se"
		else
			printf '# stderr: (empty)\n'
		fi
		printf '# below: stdout, unchanged\n'
		cat "$so"
	} >"$OUT/$file"
	rm -f "$so" "$se"
	log "$file (exit $rc)"
}

submit() { sbatch --parsable --output=/dev/null --mem=100M -p cpu -t 2 "$@" | cut -d';' -f1; }

token=$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')
separators=($'\n' $'\r' $'\v' $'\f' $'\x1c' $'\x1d' $'\x1e' $'\x1f' $'\u0085' $'\u2028' $'\u2029')
ids=()
for i in "${!separators[@]}"; do
	s=${separators[$i]}
	ids+=("$(submit -J "sep${i}-${token}${s}x" --comment "c${s}${i}" --wrap true)")
done
plain=$(submit -J "plain-$token" --comment "plain comment" --wrap 'sleep 1')
array=$(sbatch --parsable --output=/dev/null --mem=100M -p fat -t 2 --begin=now+3600 \
	--array=1-3 -J "array-$token" --wrap true | cut -d';' -f1)
scancel "$array"
all=$(IFS=,; echo "${ids[*]},$plain")
log "jobs $all, array $array (token $token)"
for _ in $(seq 120); do
	done_rows=$(sacct -X -n -P -j "$all" --format=State,Partition | grep -c -E '^(COMPLETED|FAILED)\|.' || true)
	[[ $done_rows -ge $((${#ids[@]} + 1)) ]] && break
	sleep 1
done
sleep 2
printf '%s\n' "token $token" "separator jobs ${ids[*]}" "plain $plain" "array $array" >"$OUT/jobs.txt"

FMT=JobID,JobName,User,Partition,State,Elapsed,Timelimit,End
NOTE="issue #15 'Done when': no Cluster, no JobIDRaw"
capture sacct_done_when.txt sacct -a -X -P --format=$FMT -j "$plain,$array"
capture sacct_done_when_noheader.txt sacct -a -X -P --noheader --format=$FMT -j "$plain,$array"
NOTE="TAB-delimited, with a header"
capture sacct_tab.txt sacct -a -X -P $'--delimiter=\t' --format=JobID,JobName,NCPUS,State,Elapsed,Submit,Start,End -j "$plain,$array"
NOTE="SLURM_TIME_FORMAT=%s in the environment (epoch seconds)"
capture sacct_epoch.txt env SLURM_TIME_FORMAT=%s sacct -a -X -P --format=JobID,JobName,State,ElapsedRaw,Submit,Start,End -j "$plain,$array"
NOTE="SACCT_FORMAT in the environment and no --format: what a live query would get if it leaked"
capture sacct_format_env.txt env SACCT_FORMAT=JobID,State sacct -a -X -P -j "$plain"
NOTE="an array cancelled while its tasks pended: the remainder is one CANCELLED row"
capture sacct_array_cancelled.txt sacct -a -X -P --format=JobIDRaw,JobID,JobName,Partition,State,Elapsed,Start,End -j "$array"
NOTE=$'jobs named and commented with each line separator: \\n \\r \\v \\f \\x1c \\x1d \\x1e \\x1f \\x85 \\u2028 \\u2029 (sbatch -J "sep<i>-<token><separator>x" --comment "c<separator><i>"), printed raw'
capture sacct_separators.txt sacct -a -X -P --format=JobIDRaw,JobID,JobName,Partition,State,Elapsed,End,Comment -j "$all"
capture sacct_separators.json sacct -a --json -j "$all"
NOTE=''
