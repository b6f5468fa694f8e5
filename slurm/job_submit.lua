--[[
job_submit.lua: slurm-advisor's time limits (and memory) for jobs submitted with plain sbatch.

slurmctld runs this for every submission (Lua 5.1, as user slurm). When a job comes without a
time limit and the limits file written by `advisor export` knows its task (its job name; a
Nextflow job's process, a Snakemake job's rule: task_key), the job gets the advised limit of its partition(s), clamped to the partition's MaxTime, an `advisor:lua,...` tag
appended to its comment (so accounting can match it), and one line for the user on stderr.
Anything else - no file, an unreadable or corrupt file, an unknown name, a job with --time, any
error at all - lets the job through unchanged: this plugin never rejects a job, and never makes
one that slurmctld would refuse (a limit above MaxTime, the job's QoS or association MaxWall,
or below --time-min, a comment over Slurm's limit).

While `advisor guard` is alive (its heartbeat file, beside the export, is fresh) a user's own
--time is lowered to the advice as well, and the plugin records what it did in the job's
AdminComment (`advisor:lua,action=guarded,limit=L,...,req=R`): users cannot set that field,
so it is the one record the guard trusts. R is the job's own --time and L the plugin's own
advice, never what a tag in the comment claims; slurm_job_modify refuses a user's comment
update that writes an `advisor:` tag (docs/guard.md).

Every input a user controls is bounded before any work that grows with it: the name, the
comment, the partition list, the QoS and the account (Slurm refuses each over 1024 bytes after
this plugin has run, so the plugin must not pay for them first).

The file tells each user's own limits, so `advisor export` writes it readable by slurmctld's
group only (0640), and it holds no user's job names: users[user].tasks is keyed by
name_key(user, name), a BLAKE2s digest under a secret key (advisor/store/names.py) that
`advisor export` keeps beside it (KEY_PATH, also 0640), computed here in plain Lua 5.1
arithmetic, since no C hash library is guaranteed inside slurmctld (0.1 ms for a short name,
1.5 ms at 1024 bytes).  Without the key that made the file (its key_id) users' own entries are
not used. A name or comment over Slurm's 1024-byte limit returns at once:
slurmctld rejects such a job after the plugin, and it must not cost the controller first.

The file is parsed once and parsed again only when it changes (mtime, size and inode through
lua-filesystem when installed, else by comparing its bytes). `advisor export` replaces it with
a rename, so a half-written file is never seen.

Memory (the export's "memory" section, docs/memory.md): a job that asks for no memory gets the
task's memory P95 as pn_min_memory (--mem per node) when the site's mode is fill, or one line
saying what it would get in advise mode; never above what its partitions allow.

Installation for sites: contrib/job_submit/README.md. The test cluster installs this file from
slurm/job_submit.lua (slurm/cluster.sh up); it must stay valid without a limits file.
--]]

-- Where `advisor export --out PATH` writes (readable by user slurm), and its key.
local EXPORT_PATH = "/etc/slurm/advisor-limits.json"
local KEY_PATH = EXPORT_PATH .. ".key"
-- Where `advisor guard --export EXPORT_PATH` beats (advisor.services.guard.heartbeat_file).
local GUARD_PATH = EXPORT_PATH:gsub("%.json$", "") .. ".guard.json"
local PASSWD_PATH = "/etc/passwd"

local have_json, cjson = pcall(require, "cjson")
local have_lfs, lfs = pcall(require, "lfs")

-- Slurm's "no number" values for limits in minutes (slurm.h).
local NO_VAL = slurm.NO_VAL or 4294967294
local INFINITE = 4294967295
-- slurmctld 22.05 refuses a job whose name or comment is longer (_test_job_desc_fields:
-- strlen > 1024 is ESLURM_PATHNAME_TOO_LONG; 1024 bytes pass, checked on the test cluster).
local NAME_MAX = 1024
local COMMENT_MAX = 1024
-- The same bound for the other strings read here (slurmctld refuses a longer partition list
-- in _test_job_desc_fields, after the plugin; a QoS or account name is far shorter).
local FIELD_MAX = 1024
-- The heartbeat file holds three numbers; a bigger one is not the guard's.
local GUARD_MAX_BYTES = 4096
-- A uid not in /etc/passwd (LDAP users) reads the file again at most this often.
local PASSWD_RETRY_S = 60
-- `advisor export` writes at most 16 MiB; anything much bigger is not its file.
local EXPORT_MAX_BYTES = 32 * 1024 * 1024
local EXPORT_VERSION = 3

local cache = { key = nil, raw = nil, doc = nil, name_key = nil }
local users_by_uid = nil
local passwd_read_at = nil

-- BLAKE2s in plain Lua 5.1 arithmetic: the same digest as Python's hashlib.blake2s.
local TWO32 = 4294967296
local XOR8 = nil -- XOR of two bytes, a * 256 + b -> a ^ b: built at the first digest (20 ms)

local function xor_table()
	local t = {}
	for a = 0, 255 do
		for b = 0, 255 do
			local r, bit, x, y = 0, 1, a, b
			while x > 0 or y > 0 do
				if x % 2 ~= y % 2 then
					r = r + bit
				end
				x, y, bit = (x - x % 2) / 2, (y - y % 2) / 2, bit * 2
			end
			t[a * 256 + b] = r
		end
	end
	return t
end

local function bxor(a, b)
	local a0, b0 = a % 256, b % 256
	a, b = (a - a0) / 256, (b - b0) / 256
	local a1, b1 = a % 256, b % 256
	a, b = (a - a1) / 256, (b - b1) / 256
	local a2, b2 = a % 256, b % 256
	a, b = (a - a2) / 256, (b - b2) / 256
	return XOR8[a0 * 256 + b0] + XOR8[a1 * 256 + b1] * 256 + XOR8[a2 * 256 + b2] * 65536
		+ XOR8[a * 256 + b] * 16777216
end

-- Rotate right by n bits (0 < n < 32).
local function rotr(x, n)
	local low = x % 2 ^ n
	return (x - low) / 2 ^ n + low * 2 ^ (32 - n)
end

local IV = {
	0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19,
}
local SIGMA = {
	{ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
	{ 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3 },
	{ 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4 },
	{ 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8 },
	{ 9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13 },
	{ 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9 },
	{ 12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11 },
	{ 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10 },
	{ 6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5 },
	{ 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0 },
}

local function word(s, i) -- little-endian 32-bit word at byte i (1-based), zero past the end
	local b0, b1, b2, b3 = s:byte(i, i + 3)
	return (b0 or 0) + (b1 or 0) * 256 + (b2 or 0) * 65536 + (b3 or 0) * 16777216
end

local function compress(h, s, offset, counter, last)
	local m = {}
	for i = 0, 15 do
		m[i] = word(s, offset + 4 * i)
	end
	local v = {}
	for i = 0, 7 do
		v[i], v[i + 8] = h[i], IV[i + 1]
	end
	v[12] = bxor(v[12], counter % TWO32)
	v[13] = bxor(v[13], (counter - counter % TWO32) / TWO32)
	if last then
		v[14] = TWO32 - 1 - v[14]
	end
	local function g(a, b, c, d, x, y)
		local va, vb, vc, vd = v[a], v[b], v[c], v[d]
		va = (va + vb + x) % TWO32
		vd = rotr(bxor(vd, va), 16)
		vc = (vc + vd) % TWO32
		vb = rotr(bxor(vb, vc), 12)
		va = (va + vb + y) % TWO32
		vd = rotr(bxor(vd, va), 8)
		vc = (vc + vd) % TWO32
		vb = rotr(bxor(vb, vc), 7)
		v[a], v[b], v[c], v[d] = va, vb, vc, vd
	end
	for round = 1, 10 do
		local s_ = SIGMA[round]
		g(0, 4, 8, 12, m[s_[1]], m[s_[2]])
		g(1, 5, 9, 13, m[s_[3]], m[s_[4]])
		g(2, 6, 10, 14, m[s_[5]], m[s_[6]])
		g(3, 7, 11, 15, m[s_[7]], m[s_[8]])
		g(0, 5, 10, 15, m[s_[9]], m[s_[10]])
		g(1, 6, 11, 12, m[s_[11]], m[s_[12]])
		g(2, 7, 8, 13, m[s_[13]], m[s_[14]])
		g(3, 4, 9, 14, m[s_[15]], m[s_[16]])
	end
	for i = 0, 7 do
		h[i] = bxor(h[i], bxor(v[i], v[i + 8]))
	end
end

-- BLAKE2s (RFC 7693) of text, outlen bytes, with an 8-byte personalisation and an optional key
-- (up to 32 bytes: its block, zero-padded, comes first), as lowercase hex.
local function blake2s(text, outlen, person, key)
	XOR8 = XOR8 or xor_table()
	local h = {}
	for i = 0, 7 do
		h[i] = IV[i + 1]
	end
	local keylen = key and #key or 0
	if keylen > 0 then
		text = key .. string.rep("\0", 64 - keylen) .. text
	end
	h[0] = bxor(h[0], 0x01010000 + keylen * 256 + outlen)
	h[6] = bxor(h[6], word(person, 1))
	h[7] = bxor(h[7], word(person, 5))
	local n = #text
	local offset = 1
	while n - (offset - 1) > 64 do
		compress(h, text, offset, offset - 1 + 64, false)
		offset = offset + 64
	end
	compress(h, text, offset, n, true)
	local out = {}
	for i = 0, outlen - 1 do
		local w = h[(i - i % 4) / 4]
		local byte = math.floor(w / 256 ^ (i % 4)) % 256
		out[#out + 1] = string.format("%02x", byte)
	end
	return table.concat(out)
end

-- The key of a user's job name in users[user].tasks (advisor/store/names.py).
local function name_key(user, name, key)
	return blake2s(user .. "\0" .. name, 12, "advname2", key)
end


local function read_all(path)
	local handle = io.open(path, "rb")
	if not handle then
		return nil
	end
	local text = handle:read("*a")
	handle:close()
	return text
end

-- The key users' job names are digested with (KEY_PATH: 64 hex digits), when it is the one
-- the export was made with (its key_id); else nil, and users' own entries are not used.
local function names_key(doc)
	local text = read_all(KEY_PATH)
	local hex = text and text:match("^(%x+)%s*$")
	if not hex or #hex ~= 64 then
		slurm.log_error("advisor: no key in %s; users' own limits are not used", KEY_PATH)
		return nil
	end
	local key = hex:gsub("%x%x", function(pair)
		return string.char(tonumber(pair, 16))
	end)
	if blake2s(key, 4, "advkeyid") ~= doc.key_id then
		slurm.log_error("advisor: %s is not the key of %s; users' own limits are not used", KEY_PATH, EXPORT_PATH)
		return nil
	end
	return key
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
	if have_lfs then
		local size = lfs.attributes(EXPORT_PATH, "size")
		if size and size > EXPORT_MAX_BYTES then
			cache.key, cache.raw, cache.doc = key, nil, nil
			slurm.log_error("advisor: %s is %d bytes, over %d; jobs pass unchanged", EXPORT_PATH, size, EXPORT_MAX_BYTES)
			return nil
		end
	end
	local raw = read_all(EXPORT_PATH)
	if raw == nil or #raw > EXPORT_MAX_BYTES then
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
	if ok and type(doc) == "table" and doc.version == EXPORT_VERSION then
		cache.doc = doc
		cache.name_key = names_key(doc)
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
	if users_by_uid == nil or (users_by_uid[uid] == nil and os.time() - passwd_read_at >= PASSWD_RETRY_S) then
		users_by_uid = {}
		passwd_read_at = os.time()
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
		if #given > FIELD_MAX then
			return {} -- slurmctld refuses the job after the plugin: no work for it here
		end
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
-- "rule_RULE[_wildcards_...]" as comment) its rule, a classic Snakemake job script
-- ("snakejob.RULE.JOBID[.sh]", "RULE.JOBID.sh") its rule, any other job its name.
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
		return name
	end
	local rule = name:match("^snakejob%.([A-Za-z_][A-Za-z0-9_]*)%.%d+%.sh$")
		or name:match("^snakejob%.([A-Za-z_][A-Za-z0-9_]*)%.%d+$")
		or name:match("^([A-Za-z_][A-Za-z0-9_]*)%.%d+%.sh$")
	return rule or name
end

local function encode(text)
	return (text:gsub("[^A-Za-z0-9%._~%-]", function(char)
		return string.format("%%%02X", string.byte(char))
	end))
end

local function longer(text, bytes)
	return type(text) == "string" and #text > bytes
end

-- The name the limits file knows the job by: the one place that says so.
local function job_name(job_desc)
	return job_desc.name
end

-- The user's own entry for a name in a section ("tasks", "families") of theirs (a keyed
-- digest of user and name keys it), or nil.
local function own_entry(mine, user, name, section)
	local own = table_at(mine, section)
	if own == nil or next(own) == nil or type(user) ~= "string" or cache.name_key == nil then
		return nil
	end
	return table_at(own, name_key(user, name, cache.name_key))
end

-- The name's family, as advisor/history/keys.py masks it (each run of digits one "#"), or nil
-- for a name without digits: its family would repeat the name.
local function name_family(name)
	local family, masked = name:gsub("[0-9]+", "#")
	if masked == 0 then
		return nil
	end
	return family
end

-- True while `advisor guard` is alive: its heartbeat file is at most fresh_s old. Then a user's
-- own --time may be lowered (policy guarded), as the guard raises it again, up to the request,
-- before the job reaches it (docs/guard.md). A small file of its own, read only for jobs that
-- give a --time: the export is not rewritten (and decoded again) at every poll.
local function guard_alive()
	local handle = io.open(GUARD_PATH, "rb")
	if not handle then
		return false
	end
	local raw = handle:read(GUARD_MAX_BYTES + 1)
	handle:close()
	if not have_json or raw == nil or #raw > GUARD_MAX_BYTES then
		return false
	end
	local ok, guard = pcall(cjson.decode, raw)
	if not ok or type(guard) ~= "table" then
		return false
	end
	local beat = tonumber(guard.heartbeat_epoch)
	local fresh = tonumber(guard.fresh_s)
	if not beat or not fresh then
		return false
	end
	local age = os.time() - beat
	return age <= fresh and age >= -fresh
end

-- The longest limit (minutes) Slurm lets the job have in one partition beside MaxTime: the
-- MaxWall of its association, of its QoS (--qos, else the association's) and of the
-- partition's QoS, as `advisor export` carries them (SiteLimits.job_bounds in advisor/slurm/records.py says why the
-- smallest). Returns false when the job has no association Slurm would accept, nil when no
-- bound applies.
local function wall_bound(doc, user, job_desc, part_name)
	local limits = table_at(doc, "limits")
	if not limits or limits.known ~= true then
		return nil
	end
	local mine = table_at(table_at(limits, "associations"), user)
	local account = job_desc.account
	if type(account) ~= "string" or account == "" then
		account = mine and mine.default_account
	end
	local assoc = table_at(table_at(mine, "accounts"), account)
	assoc = table_at(table_at(assoc, "partitions"), part_name) or assoc
	if not assoc and limits.associations_required == true then
		return false
	end
	local qos_name = job_desc.qos
	if type(qos_name) ~= "string" or qos_name == "" then
		qos_name = (assoc and assoc.qos) or limits.default_qos
	end
	local qos = table_at(limits, "qos")
	local part = table_at(table_at(doc, "partitions"), part_name)
	local bound = nil
	local function lower(value)
		value = tonumber(value)
		if value and value == value and value >= 0 and (bound == nil or value < bound) then
			bound = value
		end
	end
	if assoc then
		lower(assoc.max_wall_min)
	end
	lower(table_at(qos, qos_name) and qos[qos_name].max_wall_min)
	if part and type(part.qos) == "string" then
		lower(table_at(qos, part.qos) and qos[part.qos].max_wall_min)
	end
	return bound
end

-- A job without --time that no entry knows yet: `advisor readvise` lowers it once its task has
-- the history it lacks now (docs/limits.md), if this plugin marked it so.
local function waiting(request, name)
	if request then
		return nil
	end
	return { waiting = true, name = name }
end

-- How many jobs the submission makes: a job array's tasks (--array: job_desc.array_inx), else
-- 1; a spec slurmctld would refuse counts as 1.  As advisor.sbatch.request.array_size.
local function array_tasks(spec)
	if type(spec) ~= "string" or spec == "" then
		return 1
	end
	local total = 0
	for item in (spec:gsub("%%.*$", "")):gmatch("[^,]+") do
		local first, last, step = item:match("^%s*(%d+)%-(%d+):(%d+)%s*$")
		if not first then
			first, last = item:match("^%s*(%d+)%-(%d+)%s*$")
		end
		if not first then
			first = item:match("^%s*(%d+)%s*$")
			last = first
		end
		first, last, step = tonumber(first), tonumber(last), tonumber(step or 1)
		if not first or not last or not step or last < first or step < 1 then
			return 1
		end
		total = total + math.floor((last - first) / step) + 1
	end
	return math.max(total, 1)
end

-- What to set, or nil: { time_limit, time_min (or nil), comment (or nil), name, request (or nil) },
-- or { waiting = true, name } for a job to mark for `advisor readvise`.
local function advice(job_desc, part_list, submit_uid)
	local request = nil -- the user's own --time, when the guard may lower it
	if job_desc.time_limit ~= NO_VAL then
		request = tonumber(job_desc.time_limit)
		if not request or request == INFINITE or request < 1 then
			return nil -- the user chose a limit the guard cannot be the ceiling of
		end
	end
	local name = job_name(job_desc)
	if type(name) ~= "string" or name == "" or #name > NAME_MAX or longer(job_desc.comment, COMMENT_MAX)
		or longer(job_desc.partition, FIELD_MAX) or longer(job_desc.qos, FIELD_MAX)
		or longer(job_desc.account, FIELD_MAX) then
		return nil -- slurmctld rejects a longer name, comment or list anyway
	end
	name = task_key(name, job_desc.comment)
	local doc = limits()
	if not doc then
		return nil
	end
	if request and not guard_alive() then
		return nil -- the user chose a limit, and no guard would save the job from a lower one
	end
	-- As `advisor sbatch` decides: the task model (the user's own refinement first), else the
	-- history policy (the user's job name, its name family, else the user's jobs in the
	-- partition).
	local user = user_name(job_desc, submit_uid)
	local mine = table_at(table_at(doc, "users"), user)
	local family = name_family(name)
	local entry = own_entry(mine, user, name, "tasks") or table_at(table_at(doc, "tasks"), name)
		or (family and own_entry(mine, user, family, "families"))
	local per_partition = table_at(entry, "partitions") or table_at(mine, "partitions")
	if not per_partition then
		return waiting(request, name)
	end
	local high, low, cap
	local names = partitions(job_desc, part_list)
	if #names == 0 then
		return nil
	end
	local tasks = array_tasks(job_desc.array_inx)
	for _, part_name in ipairs(names) do
		-- The plugin sees no running jobs: a job array with more tasks than the kills the
		-- partition's budget allowed at export time (its credit) is left to `advisor readvise`,
		-- which counts them as the wrapper does (the history policy's burst bound).
		local credit = tonumber(table_at(table_at(doc, "partitions"), part_name) and doc.partitions[part_name].credit)
		if tasks > 1 and credit and credit == credit and tasks > credit then
			return waiting(request, name)
		end
		local limit = tonumber(table_at(per_partition, part_name) and per_partition[part_name].limit_min)
		-- limit ~= limit: NaN, which cjson reads; above NO_VAL - 1 is no number of minutes
		if not limit or limit ~= limit or limit < 1 or limit > NO_VAL - 1 then
			return waiting(request, name) -- a partition without advice: Slurm's default stays
		end
		limit = math.ceil(limit)
		local part = part_list and part_list[part_name]
		local max_time = part and tonumber(part.max_time)
		if max_time == NO_VAL or max_time == INFINITE then
			max_time = nil
		end
		local wall = wall_bound(doc, user, job_desc, part_name)
		if wall == false then
			return nil -- no association: slurmctld refuses the job, with its own message
		end
		if wall and (max_time == nil or wall < max_time) then
			max_time = math.floor(wall)
		end
		if max_time then
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
	-- Never below the job's own --time-min (slurmctld: ESLURM_INVALID_TIME_MIN_LIMIT); when
	-- even MaxTime is below it, Slurm's own rules decide.
	local given_min = tonumber(job_desc.time_min)
	if given_min and given_min ~= NO_VAL and given_min > high then
		if cap and given_min > cap then
			return nil
		end
		high = given_min
	end
	if request and request <= high then
		return nil -- already within the advice
	end
	if request and cap and request > cap then
		return nil -- a request over MaxTime or MaxWall: no guard may raise to it; Slurm decides
	end
	if high < 1 then
		return nil -- a bound of 0 minutes: Slurm's own rules decide
	end
	-- The tag, unless the comment would then be longer than slurmctld accepts: the limit still
	-- holds, accounting then sees the job without the advisor's tag.
	local tag = string.format("advisor:lua,action=set,limit=%d,task=%s", high, encode(name))
	local record = nil
	if request then
		tag = string.format("advisor:lua,action=guarded,limit=%d,task=%s,req=%d", high, encode(name), request)
		-- The guard's record: in the AdminComment, which the job's owner cannot change.
		record = tag
		local admin = job_desc.admin_comment
		if type(admin) == "string" and admin ~= "" then
			record = admin .. " " .. tag
		end
	end
	local comment = tag
	local given = job_desc.comment
	if type(given) == "string" and given ~= "" then
		comment = given .. " " .. comment
	end
	if #comment > COMMENT_MAX then
		comment = nil -- the limit holds; accounting sees the job without the advisor's tag
	end
	local time_min = nil
	if low < high and job_desc.time_min == NO_VAL then
		time_min = low
	end
	return { time_limit = high, time_min = time_min, comment = comment, name = name, request = request,
		record = record }
end

-- The record `advisor readvise` looks for, in the AdminComment (which the job's owner cannot
-- change), unless it would be longer than slurmctld accepts.
local function mark_waiting(job_desc, name)
	local record = string.format("advisor:lua,action=waiting,limit=0,task=%s", encode(name))
	local admin = job_desc.admin_comment
	if type(admin) == "string" and admin ~= "" then
		record = admin .. " " .. record
	end
	if #record <= COMMENT_MAX then
		job_desc.admin_comment = record
	end
end

-- Only this plugin writes an `advisor:` tag into AdminComment: whatever a submission brought
-- there itself (slurmctld refuses AdminComment from non-administrators in scontrol update; a
-- crafted submission RPC is not relied on to be refused as well) goes, except root's.
local function without_foreign_record(job_desc, submit_uid)
	local admin = job_desc.admin_comment
	if submit_uid ~= 0 and type(admin) == "string" and admin:find("advisor:", 1, true) then
		job_desc.admin_comment = ""
	end
end

-- Memory (docs/memory.md): the export's "memory" section, as `advisor sbatch` decides --mem.
-- pn_min_memory is NO_VAL64 when the job asks for no memory, MB per node for --mem, and has
-- the MEM_PER_CPU bit for --mem-per-cpu; mem_per_tres holds --mem-per-gpu (slurm.h, 22.05).
local NO_VAL64 = slurm.NO_VAL64 or 18446744073709551614
local NO_VAL16 = 65534
local MEM_PER_CPU = 9223372036854775808

-- The job's own memory per node in MB; nil when it asks for none, false when per CPU or GPU.
local function asked_memory(job_desc)
	local per_gpu = job_desc.mem_per_tres
	if type(per_gpu) == "string" and per_gpu ~= "" then
		return false
	end
	local mem = tonumber(job_desc.pn_min_memory)
	if mem == nil or mem >= NO_VAL64 then
		return nil
	end
	if mem >= MEM_PER_CPU then
		return false
	end
	return mem
end

-- The job's CPUs per node as far as its request says (1 for what it leaves out).
local function cpus_of(job_desc)
	local per_task = tonumber(job_desc.cpus_per_task)
	local tasks = tonumber(job_desc.ntasks_per_node)
	per_task = (per_task and per_task > 0 and per_task < NO_VAL16) and per_task or 1
	tasks = (tasks and tasks > 0 and tasks < NO_VAL16) and tasks or 1
	return per_task * tasks
end

-- What to do with the job's memory, or nil: { mem (MB), name, action ("set", "lowered",
-- "advise"), own (the user's MB, when lowered) }.  Never a value a partition of the job would
-- refuse (over its max_mb, or over max_per_cpu_mb times the job's CPUs).
local function memory_advice(job_desc, part_list, submit_uid)
	local memory = table_at(limits(), "memory")
	if not memory then
		return nil
	end
	local name = job_name(job_desc)
	if type(name) ~= "string" or name == "" or #name > NAME_MAX or longer(job_desc.comment, COMMENT_MAX) then
		return nil
	end
	name = task_key(name, job_desc.comment)
	local user = user_name(job_desc, submit_uid)
	local mine = table_at(table_at(memory, "users"), user)
	local entry = (mine and type(user) == "string" and cache.name_key
			and table_at(mine, name_key(user, name, cache.name_key)))
		or table_at(table_at(memory, "tasks"), name)
	local value = entry and tonumber(entry.mem_mb)
	if not value or value ~= value or value < 1 then
		return nil
	end
	local names = partitions(job_desc, part_list)
	local parts = table_at(memory, "partitions")
	if #names == 0 or not parts then
		return nil
	end
	local factor = 1
	for _, part_name in ipairs(names) do
		local part = table_at(parts, part_name)
		if not part then
			return nil -- a partition the export does not know
		end
		local f = tonumber(part.factor) or 1
		if f > factor then
			factor = f
		end
	end
	value = math.ceil(value * factor)
	for _, part_name in ipairs(names) do
		local part = parts[part_name]
		local most = tonumber(part.max_mb) or -1
		local per_cpu = tonumber(part.max_per_cpu_mb) or -1
		if (most > 0 and value > most) or (per_cpu > 0 and value > per_cpu * cpus_of(job_desc)) then
			return nil
		end
	end
	local own = asked_memory(job_desc)
	if own == false then
		return nil
	end
	if own ~= nil then
		if memory.mode == "lower" and value < own then
			return { mem = value, name = name, action = "lowered", own = own }
		end
		return nil
	end
	if memory.mode == "fill" or memory.mode == "lower" then
		return { mem = value, name = name, action = "set" }
	end
	return { mem = value, name = name, action = "advise" }
end

-- Set the job's memory and tag it (mem=MB in the advisor:lua tag this plugin just wrote, tagged,
-- or in one of its own: never in a tag the comment brought), or only tell the user in advise mode.
local function apply_memory(job_desc, mem, tagged)
	if mem.action == "advise" then
		slurm.log_user("advisor: memory: would set --mem=%dM for '%s' (the site advises only)", mem.mem, mem.name)
		return
	end
	local tag = string.format(",mem=%d", mem.mem)
	local comment = job_desc.comment
	if tagged then
		comment = comment .. tag
	else
		local own = string.format("advisor:lua,action=none,limit=0,task=%s%s", encode(mem.name), tag)
		comment = (type(comment) == "string" and comment ~= "") and (comment .. " " .. own) or own
	end
	job_desc.pn_min_memory = mem.mem
	if #comment <= COMMENT_MAX then
		job_desc.comment = comment
	end
	if mem.action == "lowered" then
		slurm.log_user("advisor: --mem %d MB lowered to %d MB predicted for '%s'", mem.own, mem.mem, mem.name)
	else
		slurm.log_user("advisor: no memory asked; --mem=%dM predicted for '%s'", mem.mem, mem.name)
	end
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	pcall(without_foreign_record, job_desc, submit_uid)
	local ok, found = pcall(advice, job_desc, part_list, submit_uid)
	local err
	if not ok then
		slurm.log_error("advisor: job_submit.lua: %s (job passed unchanged)", tostring(found))
		return slurm.SUCCESS
	end
	if found and found.waiting then
		ok, err = pcall(mark_waiting, job_desc, found.name)
		if not ok then
			slurm.log_error("advisor: job_submit.lua: %s", tostring(err))
		end
		found = nil
	end
	if found then
		ok, err = pcall(function()
			job_desc.time_limit = found.time_limit
			if found.comment then
				job_desc.comment = found.comment
			end
			if found.record then
				job_desc.admin_comment = found.record
			end
			if found.time_min then
				job_desc.time_min = found.time_min
			end
			if found.request then
				slurm.log_user("advisor: --time %d min lowered to %d min predicted for '%s'; advisor guard raises it up to %d min if needed", found.request, found.time_limit, found.name, found.request)
			else
				slurm.log_user("advisor: no --time given; time limit %d min predicted for '%s'", found.time_limit, found.name)
			end
		end)
		if not ok then
			slurm.log_error("advisor: job_submit.lua: %s", tostring(err))
		end
	end
	local tagged = ok and found and found.comment ~= nil and job_desc.comment == found.comment
	local mok, mem = pcall(memory_advice, job_desc, part_list, submit_uid)
	if not mok then
		slurm.log_error("advisor: job_submit.lua: memory: %s (job's memory unchanged)", tostring(mem))
	elseif mem then
		ok, err = pcall(apply_memory, job_desc, mem, tagged)
		if not ok then
			slurm.log_error("advisor: job_submit.lua: memory: %s", tostring(err))
		end
	end
	return slurm.SUCCESS
end

-- A user may change their job's comment, but not write an `advisor:` tag into it: tags are what
-- accounting matches a job to its advice by. Root (and the tag already there, unchanged) pass.
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	local ok, refused = pcall(function()
		local comment = job_desc.comment
		if modify_uid == 0 or type(comment) ~= "string" or not comment:find("advisor:", 1, true) then
			return false
		end
		local before = job_rec and job_rec.comment
		return comment ~= before
	end)
	if ok and refused then
		slurm.log_user("advisor: a comment holding 'advisor:' is the advisor's tag; only the advisor writes it")
		return slurm.ESLURM_ACCESS_DENIED or slurm.ERROR
	end
	return slurm.SUCCESS
end

return slurm.SUCCESS
