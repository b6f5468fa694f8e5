--[[
job_submit.lua for the slurm-advisor test cluster (installed by
slurm/cluster.sh to /etc/slurm/job_submit.lua).

This is a deliberately minimal, VALID placeholder: it accepts every job
unchanged. slurmctld refuses to start (fatal "failed to initialize
job_submit plugin") when JobSubmitPlugins=lua is set and this file is
missing, so the test cluster always installs one.

The sbatch-wrapper issue will fill it in. The real plugin will read a JSON
export written by the advisor (written to a temporary file and rename()d
into place, so a reader never sees a half-written file) and use it to set
a predicted time limit / comment. It deliberately does not read the
advisor's SQLite database: that database runs in WAL mode, and a WAL
database is unreadable ("attempt to write a readonly database") by user
slurm, which is who slurmctld runs this script as.

Runs inside slurmctld under Lua 5.1. Debian's lua-cjson (require "cjson")
loads inside slurmctld.
--]]

function slurm_job_submit(job_desc, part_list, submit_uid)
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
