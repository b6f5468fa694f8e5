--[[
job_submit.lua: slurm-advisor's time limits for jobs submitted with plain sbatch.

slurmctld runs this for every submission (Lua 5.1, as user slurm). When a job comes without a
time limit and the limits file written by `advisor export` knows its task (its job name; a
Nextflow job's process, a Snakemake job's rule: task_key), the job gets the advised limit of its partition(s), clamped to the partition's MaxTime, an `advisor:lua,...` tag
appended to its comment (so accounting can match it), and one line for the user on stderr.
Anything else - no file, an unreadable or corrupt file, an unknown name, a job with --time, any
error at all - lets the job through unchanged: this plugin never rejects a job.

The file is parsed once and parsed again only when it changes (mtime, size and inode through
lua-filesystem when installed, else by comparing its bytes). `advisor export` replaces it with
a rename, so a half-written file is never seen.

Installation for sites: contrib/job_submit/README.md. The test cluster installs this file from
slurm/job_submit.lua (slurm/cluster.sh up); it must stay valid without a limits file.
--]]

-- Where `advisor export --out PATH` writes (readable by user slurm).
local EXPORT_PATH = "/etc/slurm/advisor-limits.json"
local PASSWD_PATH = "/etc/passwd"

local have_json, cjson = pcall(require, "cjson")
local have_lfs, lfs = pcall(require, "lfs")

-- Slurm's "no number" values for limits in minutes (slurm.h).
local NO_VAL = slurm.NO_VAL or 4294967294
local INFINITE = 4294967295

local cache = { key = nil, raw = nil, doc = nil }
local users_by_uid = nil

local function read_all(path)
	local handle = io.open(path, "rb")
	if not handle then
		return nil
	end
	local text = handle:read("*a")
	handle:close()
	return text
end

-- A value that changes whenever the file is replaced; nil when there is no file, false when
-- lua-filesystem is missing (then the bytes are compared instead).
local function file_key(path)
	if not have_lfs then
		return false
	end
	local attr = lfs.attributes(path)
	if not attr then
		return nil
	end
	return table.concat({ attr.dev, attr.ino, attr.size, attr.modification, attr.change }, ":")
end

-- The parsed limits file, or nil.
local function limits()
	local key = file_key(EXPORT_PATH)
	if key == nil then
		cache.key, cache.raw, cache.doc = nil, nil, nil
		return nil
	end
	if key and key == cache.key then
		return cache.doc
	end
	local raw = read_all(EXPORT_PATH)
	if raw == nil then
		cache.key, cache.raw, cache.doc = nil, nil, nil
		return nil
	end
	if not key and raw == cache.raw then
		return cache.doc
	end
	cache.key, cache.raw, cache.doc = key, raw, nil
	if not have_json then
		slurm.log_error("advisor: lua-cjson is not installed; %s is ignored", EXPORT_PATH)
		return nil
	end
	local ok, doc = pcall(cjson.decode, raw)
	if ok and type(doc) == "table" and doc.version == 1 then
		cache.doc = doc
	else
		slurm.log_error("advisor: %s is not a valid limits file; jobs pass unchanged", EXPORT_PATH)
	end
	if key then
		cache.raw = nil -- the key is enough to notice the next change
	end
	return cache.doc
end

local function user_name(job_desc, uid)
	local name = job_desc.user_name
	if type(name) == "string" and name ~= "" then
		return name
	end
	if users_by_uid == nil or users_by_uid[uid] == nil then
		users_by_uid = {}
		local text = read_all(PASSWD_PATH) or ""
		for line in text:gmatch("[^\n]+") do
			local login, id = line:match("^([^:]*):[^:]*:(%d+):")
			if login then
				users_by_uid[tonumber(id)] = login
			end
		end
	end
	return users_by_uid[uid]
end

local function table_at(parent, key)
	if type(parent) ~= "table" or key == nil then
		return nil
	end
	local child = parent[key]
	if type(child) == "table" then
		return child
	end
	return nil
end

-- The job's candidate partitions: -p a,b, else the default partition.
local function partitions(job_desc, part_list)
	local names = {}
	local given = job_desc.partition
	if type(given) == "string" and given ~= "" then
		for name in given:gmatch("[^,]+") do
			names[#names + 1] = name
		end
		return names
	end
	for name, part in pairs(part_list or {}) do
		if part.flag_default == 1 then
			names[#names + 1] = name
		end
	end
	return names
end

-- The task a job is advised under, as advisor/taskkey.py (which says why) and the cache know it:
-- a Nextflow job "nf-PROCESS_(tag)" is its process, a Snakemake job (the run's UUID as name,
-- "rule_RULE[_wildcards_...]" as comment) its rule, any other job its name.
local UUID = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"
local function task_key(name, comment)
	if name:sub(1, 3) == "nf-" then
		local rest = name:sub(4)
		local cut = rest:find("_(", 1, true) -- a process name has no '(': the first opens the tag
		local process = cut and rest:sub(1, cut - 1) or rest
		if process:find("^[A-Za-z0-9_]+$") then
			return process
		end
	elseif type(comment) == "string" and name:find(UUID) and comment:sub(1, 5) == "rule_" then
		local body = comment:match("^rule_([^ \t\n\v\f\r]*)")
		local cut = body:find("_wildcards_", 1, true)
		local rule = cut and body:sub(1, cut - 1) or body
		if rule ~= "" then
			return rule
		end
	end
	return name
end

local function encode(text)
	return (text:gsub("[^A-Za-z0-9%._~%-]", function(char)
		return string.format("%%%02X", string.byte(char))
	end))
end

-- What to set, or nil: { time_limit, time_min (or nil), comment, name }.
local function advice(job_desc, part_list, submit_uid)
	if job_desc.time_limit ~= NO_VAL then
		return nil -- the user chose a limit
	end
	local name = job_desc.name
	if type(name) ~= "string" or name == "" then
		return nil
	end
	name = task_key(name, job_desc.comment)
	local doc = limits()
	if not doc then
		return nil
	end
	-- As `advisor sbatch` decides: the task model (the user's own refinement first), else the
	-- history policy (the user's job name, else the user's jobs in the partition).
	local mine = table_at(table_at(doc, "users"), user_name(job_desc, submit_uid))
	local entry = table_at(table_at(mine, "tasks"), name) or table_at(table_at(doc, "tasks"), name)
	local per_partition = table_at(entry, "partitions") or table_at(mine, "partitions")
	if not per_partition then
		return nil
	end
	local high, low, cap
	local names = partitions(job_desc, part_list)
	if #names == 0 then
		return nil
	end
	for _, part_name in ipairs(names) do
		local limit = tonumber(table_at(per_partition, part_name) and per_partition[part_name].limit_min)
		if not limit or limit < 1 then
			return nil -- a partition without advice: Slurm's own default stays
		end
		limit = math.ceil(limit)
		local part = part_list and part_list[part_name]
		local max_time = part and tonumber(part.max_time)
		if max_time and max_time ~= NO_VAL and max_time ~= INFINITE then
			if limit > max_time then
				limit = max_time
			end
			cap = (cap == nil or max_time < cap) and max_time or cap
		end
		high = (high == nil or limit > high) and limit or high
		low = (low == nil or limit < low) and limit or low
	end
	-- One limit holds in every partition of -p a,b: above the smallest MaxTime slurmctld rejects
	-- the job (EnforcePartLimits=ALL), which this plugin must never cause.
	if cap and high > cap then
		high = cap
	end
	local tag = string.format("advisor:lua,action=set,limit=%d,task=%s", high, encode(name))
	local comment = job_desc.comment
	if type(comment) == "string" and comment ~= "" then
		tag = comment .. " " .. tag
	end
	local time_min = nil
	if low < high and job_desc.time_min == NO_VAL then
		time_min = low
	end
	return { time_limit = high, time_min = time_min, comment = tag, name = name }
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local ok, found = pcall(advice, job_desc, part_list, submit_uid)
	local err
	if not ok then
		slurm.log_error("advisor: job_submit.lua: %s (job passed unchanged)", tostring(found))
		return slurm.SUCCESS
	end
	if found then
		ok, err = pcall(function()
			job_desc.time_limit = found.time_limit
			job_desc.comment = found.comment
			if found.time_min then
				job_desc.time_min = found.time_min
			end
			slurm.log_user("advisor: no --time given; time limit %d min predicted for '%s'", found.time_limit, found.name)
		end)
		if not ok then
			slurm.log_error("advisor: job_submit.lua: %s", tostring(err))
		end
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
