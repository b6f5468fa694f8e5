#!/usr/bin/env bash
# Record sacctmgr/scontrol outputs for the limits fixtures (run under the cluster lock).
set -euo pipefail
NOTE='QoS advshort (MaxWall=00:10:00) granted to root and nobody; reservation advmaint on c1 for this recording'
out=$1
mkdir -p "$out"
version=$(sinfo --version)
rec() { # NAME CMD...
	local name=$1; shift
	local t0 t1 rc=0 so se
	so=$(mktemp); se=$(mktemp)
	t0=$(date +%s.%N)
	"$@" >"$so" 2>"$se" || rc=$?
	t1=$(date +%s.%N)
	{
		printf '# slurm version: %s (from sinfo --version)\n' "$version"
		printf '# command: %s\n' "$(printf '%q ' "$@" | sed 's/ $//')"
		printf '# date: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S+00:00)"
		printf '# exit code: %s\n' "$rc"
		printf '# elapsed: %.3f s\n' "$(echo "$t1 - $t0" | bc)"
		printf '# note: %s\n' "$NOTE"
		if [[ -s $se ]]; then sed 's/^/# stderr: /' "$se"; else echo '# stderr: (empty)'; fi
		echo '# below: stdout, unchanged'
		cat "$so"
	} >"$out/$name"
	rm -f "$so" "$se"
}
sacctmgr -i add qos advshort MaxWall=00:10:00 >/dev/null || true
sacctmgr -i modify user where name=root set qos+=advshort >/dev/null || true
sacctmgr -i modify user where name=nobody set qos+=advshort >/dev/null || true
scontrol create reservation ReservationName=advmaint StartTime=now+2hours Duration=30 Nodes=c1 Users=root Flags=MAINT >/dev/null
rec sacctmgr_qos.txt sacctmgr --noheader --parsable2 show qos format=Name,MaxWall,Flags
rec sacctmgr_assoc.txt sacctmgr --noheader --parsable2 show assoc cluster=advisor format=Cluster,Account,User,Partition,MaxWall,QOS,DefaultQOS
rec sacctmgr_user.txt sacctmgr --noheader --parsable2 show user format=User,DefaultAccount
rec scontrol_show_reservation.txt scontrol show reservation -o
rec scontrol_show_config_enforce.txt sh -c 'scontrol show config | grep -E "^AccountingStorage(Enforce|Type)"'
scontrol delete ReservationName=advmaint
rec scontrol_show_reservation_none.txt scontrol show reservation -o
sacctmgr -i modify user where name=root set qos-=advshort >/dev/null || true
sacctmgr -i modify user where name=nobody set qos-=advshort >/dev/null || true
sacctmgr -i delete qos advshort >/dev/null || true
sacctmgr -i modify account research set MaxWall=02:00:00 >/dev/null
NOTE='account research MaxWall=02:00:00: its users'\'' rows show it (parents'\'' limits inherited; WOPLimits would leave them empty)'
rec sacctmgr_assoc_inherited.txt sacctmgr --noheader --parsable2 show assoc cluster=advisor format=Cluster,Account,User,Partition,MaxWall,QOS,DefaultQOS
sacctmgr -i modify account research set MaxWall=-1 >/dev/null
