"""Running slurm/job_submit.lua under a stand-alone Lua with a stub ``slurm`` table.

Shared by the tests of the plugin (tests/unit/wrapper/test_lua.py) and of the task keys; the
``lua`` fixture (tests/unit/conftest.py) gives each interpreter in turn.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import pytest

from advisor.store.names import NAME_SCHEME, key_id
from tests.helpers.paths import REPO

#: The interpreters every case runs under (slurm/cluster.sh install installs both).
INTERPRETERS = ("lua5.1", "lua5.4")
#: Where Debian's slurm-wlm-basic-plugins puts the plugin.
PLUGIN_SO = Path("/usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_lua.so")
NO_VAL = 4294967294
#: The key the tests' exports digest users' job names with (written beside the export).
TEST_KEY = bytes(range(32))
#: What an export of this version says of itself (services/export.py).
HEAD = {"version": 3, "names": NAME_SCHEME, "key_id": key_id(TEST_KEY)}

DRIVER = r"""
slurm = { SUCCESS = 0, ERROR = -1, NO_VAL = 4294967294, NO_VAL64 = 18446744073709551614,
          ESLURM_ACCESS_DENIED = 2002 }
local logs = {}
function slurm.log_user(fmt, ...) logs[#logs + 1] = "user: " .. string.format(fmt, ...) end
function slurm.log_error(fmt, ...) logs[#logs + 1] = "error: " .. string.format(fmt, ...) end
if arg[3] == "no-lfs" then package.preload["lfs"] = function() error("hidden") end end
dofile(arg[1])
local cjson = require("cjson")
local export = arg[2]
for line in io.lines() do
  local case = cjson.decode(line)
  if case.export_text then
    local tmp = export .. ".tmp"
    local f = assert(io.open(tmp, "wb")); f:write(case.export_text); f:close()
    assert(os.rename(tmp, export))
  elseif case.delete then
    os.remove(export)
  end
  if case.guard_text then
    local path = export:gsub("%.json$", "") .. ".guard.json"
    local f = assert(io.open(path .. ".tmp", "wb")); f:write(case.guard_text); f:close()
    assert(os.rename(path .. ".tmp", path))
  end
  logs = {}
  if case.modify then
    local rc = slurm_job_modify(case.modify, case.record or {}, case.parts or {}, case.uid or 1000)
    print(cjson.encode({ rc = rc, logs = table.concat(logs, "\n") }))
  else
    local job = case.job
    if job.time_limit == nil then job.time_limit = slurm.NO_VAL end
    if job.time_min == nil then job.time_min = slurm.NO_VAL end
    if job.pn_min_memory == nil then job.pn_min_memory = slurm.NO_VAL64 end
    local rc = slurm_job_submit(job, case.parts, case.uid or 0)
    local mem = job.pn_min_memory
    if mem == slurm.NO_VAL64 then mem = -1 end
    print(cjson.encode({ rc = rc, time_limit = job.time_limit, time_min = job.time_min,
                         comment = job.comment or "", admin_comment = job.admin_comment or "",
                         logs = table.concat(logs, "\n"), pn_min_memory = mem }))
  end
end
"""

PARTS = {
    "cpu": {"flag_default": 1, "max_time": 1440},
    "fat": {"flag_default": 0, "max_time": 60},
    "inf": {"flag_default": 0, "max_time": 4294967295},
}


def missing(what: str) -> NoReturn:
    """Fail where the test command installed the interpreters (tests/run.sh), else skip."""
    if os.environ.get("ADVISOR_TEST_CLUSTER") == "1":
        pytest.fail(what)
    pytest.skip(what)


def run_cases(
    lua: str,
    tmp_path: Path,
    cases: list[dict[str, Any]],
    *,
    lfs: bool = True,
    key: bytes | None = TEST_KEY,
) -> list[dict[str, Any]]:
    """Each case's job through the plugin, the export beside it; key: its key file (None: none)."""
    export = tmp_path / "limits.json"
    if key is not None:
        Path(f"{export}.key").write_text(key.hex() + "\n")
    plugin = tmp_path / "job_submit.lua"
    text = (REPO / "slurm" / "job_submit.lua").read_text()
    original = 'local EXPORT_PATH = "/etc/slurm/advisor-limits.json"'
    assert original in text
    plugin.write_text(text.replace(original, f"local EXPORT_PATH = {json.dumps(str(export))}"))
    driver = tmp_path / "driver.lua"
    driver.write_text(DRIVER)
    done = subprocess.run(
        [lua, str(driver), str(plugin), str(export), "lfs" if lfs else "no-lfs"],
        input="\n".join(json.dumps(c) for c in cases) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    results = [json.loads(line) for line in done.stdout.splitlines()]
    for result in results:
        result["logs"] = result["logs"].splitlines()
    return results
