"""The sbatch wrapper and the export: user-chosen strings pass verbatim and touch no other job.

Job names, comments and script arguments with shell metacharacters, newlines, bytes that are not
UTF-8 (as surrogateescape text, the way Python hands argv over), megabyte strings and SQL must
reach sbatch unchanged, with only the wrapper's own options added; ``#SBATCH`` lines are read
the way sbatch reads them; and in the export (and the Lua plugin that reads it) a name can only
ever find its own entry.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from advisor.advice.forecast import Forecast
from advisor.advice.settings import parse_command_line
from advisor.advice.snapshot import Snapshot
from advisor.advice.tag import parse_tag
from advisor.errors import InputError
from advisor.history.lookup import history_limit
from advisor.sbatch.script import read_directives
from advisor.services.export import UserLimits, export_document, write_export
from advisor.slurm.records import Partition
from advisor.slurm.runner import CommandResult
from advisor.store import Store
from advisor.store.advice import Advice, record_advice
from advisor.store.names import name_key
from advisor.text import percent_encode, storable
from advisor.validate import validate
from advisor.wrapper.command import main as sbatch_main
from advisor.wrapper.submit import SideEffects
from tests.helpers.hostile import (
    HOSTILE_STRINGS,
    argv_text,
    budget,
    count,
    field,
    outcome,
    rejected,
)
from tests.helpers.lua_plugin import TEST_KEY
from tests.helpers.paths import REPO

pytestmark = pytest.mark.fuzz

MEGABYTE = "x" * (1 << 20)
#: The names the issue lists, and then some.
NAMES = (
    "a.b", "../x", '"', "users", "tasks", "partitions", "version", "é", "🙂", "a b,c", "a%20b",
    "__index", "1", "-1", "$(id)", "'; DROP TABLE advice; --", "x\nadvisor:lua,action=set",
    "\udcff", "\x00", "",
)  # fmt: skip
names = st.one_of(st.sampled_from(NAMES), argv_text)


# --- argv: verbatim, plus only the wrapper's additions -----------------------------------------


class FakePredictor(NamedTuple):
    """Every task runs ``seconds[task]`` (default 500 s) on every class, with many runs."""

    seconds: dict[str, float]

    def default_input_bytes(self, task: str) -> int | None:
        return 1_000

    def forecast(
        self, task: str, input_bytes: int | None, node_class: str, quantile: float
    ) -> Forecast | None:
        s = self.seconds.get(task, 500.0)
        return Forecast(node_class, s, s, s, s, quantile, s, 50, "fake")


PARTITIONS = {"cpu": Partition("cpu", ("c1",), 86400, 1800, True, "UP")}


def snapshot(seconds: dict[str, float]) -> Snapshot:
    return Snapshot(PARTITIONS, {"c1": "small"}, FakePredictor(seconds), tuple(seconds))


class Sbatch:
    """The flow's side effects, recording the argv sbatch got and storing advice for real."""

    def __init__(self, tmp: Path, known: Sequence[str]) -> None:
        self.tmp = tmp
        self.known = {name: 500.0 for name in known}
        self.argv: list[tuple[str, ...]] = []
        self.store = Store.open(":memory:")
        self.recorded: list[Advice] = []

    def run(self, argv: Sequence[str], stdin: str | None, waits: bool) -> CommandResult:
        self.argv.append(tuple(argv))
        return CommandResult(("sbatch", *argv), 0, "Submitted batch job 42\n", "")

    def record(self, db: str | None, advice: Advice) -> None:
        record_advice(self.store, advice)  # the real table: every job must get its row
        self.recorded.append(advice)

    def side(self) -> SideEffects:
        return SideEffects(
            env={},
            read_script=lambda p: Path(p).read_text(encoding="utf-8", errors="surrogateescape"),
            read_stdin=lambda: "",
            input_bytes=lambda paths: 1_000,
            load_snapshot=lambda db, task, user: snapshot(self.known),
            history=lambda db, user, name, parts, request_s, tasks: {
                p: history_limit(self.store, user, name, p, request_s=request_s, tasks=tasks)
                for p in parts
            },
            run_sbatch=self.run,
            estimate_start=lambda argv: pytest.fail("no --pick here"),
            record=self.record,
            user=lambda: "alice",
            cluster=lambda: "advisor",
        )


def submit(tmp: Path, argv: list[str], known: Sequence[str]) -> tuple[Sbatch, int, str]:
    world = Sbatch(tmp, known)
    err = io.StringIO()
    code = sbatch_main(argv, side=world.side(), out=io.StringIO(), err=err)
    return world, code, err.getvalue()


def _script(tmp: Path, text: str = "#!/bin/sh\ntrue\n") -> str:
    path = tmp / "job.sh"
    path.write_text(text)
    return str(path)


@budget(200)
@given(name=names, comment=st.one_of(names, field), args=st.lists(names, max_size=3),
       attached=st.booleans())  # fmt: skip
@example(name=MEGABYTE, comment=MEGABYTE, args=[MEGABYTE], attached=True)
@example(name="--time=5", comment="-t", args=["--time=1"], attached=False)
def test_names_comments_and_arguments_pass_verbatim(
    scratch: Path, name: str, comment: str, args: list[str], attached: bool
) -> None:
    script = _script(scratch)
    head = (
        [f"--job-name={name}", f"--comment={comment}"]
        if attached
        else ["-J", name, "--comment", comment]
    )
    argv = [*head, script, *args]
    world, code, _ = submit(scratch, argv, known=[name])
    count(f"sbatch_main: exit {code}")
    assert code == 0
    (sent,) = world.argv
    at = len(head)
    added = sent[at : len(sent) - len(argv) + at]
    assert [*sent[:at], *sent[at + len(added) :]] == argv  # nothing of the user's changed
    if not name:  # sbatch names the job after the script, which has no model: nothing added
        assert added == ()
        return
    assert [a.split("=", 1)[0] for a in added] == ["--time", "--comment"]
    tag = parse_tag(added[1][len("--comment=") :])
    assert tag is not None and tag.task == storable(name) and tag.source == "wrapper"
    assert percent_encode(name) in added[1]  # the bytes themselves reach Slurm
    if "advisor:" not in comment:  # the user's comment, then the tag (a user's own tag is replaced)
        base = comment.rstrip()
        prefix = "--comment=" + (f"{base} " if base else "") + "advisor:wrapper,"
        assert added[1].startswith(prefix) and " " not in added[1][len(prefix) :]
    (advice,) = world.recorded
    assert advice.task == name and tuple(advice.argv) == sent
    (row,) = world.store.query("SELECT task, argv FROM advice")
    assert json.loads(row["argv"]) == list(sent)


def test_a_name_that_is_not_utf8_is_advised_and_recorded(scratch: Path) -> None:
    # Regression: the advice row of a job named with a byte that is not UTF-8 (argv holds it
    # as a surrogate) raised UnicodeEncodeError in SQLite: the submission lost its row.
    world, code, err = submit(scratch, ["-J", "r\udcffn", _script(scratch)], known=["r\udcffn"])
    assert (code, err) == (0, "")
    (row,) = world.store.query("SELECT task FROM advice")
    assert row["task"] == "r\ufffdn"


@budget(300)
@given(tokens=st.lists(st.one_of(names, field), max_size=8), script=argv_text)
def test_the_split_never_loses_or_reorders_a_word(tokens: list[str], script: str) -> None:
    argv = [*tokens, "--", script]
    cmd = outcome(parse_command_line, argv)
    if isinstance(cmd, InputError):
        return
    kept = list(cmd.sbatch.args)
    advisor_words = len(argv) - len(kept)
    assert advisor_words >= 0
    it = iter(argv)
    assert all(word in it for word in kept)  # a subsequence: only advisor options removed
    assert kept[-2:] == ["--", script] or kept[-1:] == [script]


# --- #SBATCH lines -----------------------------------------------------------------------------

#: A directive whose first word is one of these separates heterogeneous job components.
_HETJOB_WORDS = ("hetjob", "packjob")
#: Characters that Python's str.splitlines() or str.isspace() treat as line ends or spaces, but
#: sbatch (bytes, C locale) does not.
NOT_C_SPACE = "\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u205f\u3000"


def sbatch_quote(word: str) -> str:
    """A word as one #SBATCH argument: double quotes, backslash before backslash and quote."""
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


_word = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\n\x00"),
    min_size=1, max_size=20,
) | st.sampled_from([*NOT_C_SPACE, *(s for s in HOSTILE_STRINGS if s and "\n" not in s)])  # fmt: skip


@budget(300)
@given(words=st.lists(_word, min_size=1, max_size=5).filter(lambda w: w[0] not in _HETJOB_WORDS))
@example(words=["--job-name=a\u2028--time=5"])
@example(words=["--job-name=a\xa0b", "--comment=#x"])
@example(words=["--comment='x' \"y\" \\z # not a comment"])
def test_quoted_directive_words_read_back_exactly(words: list[str]) -> None:
    """Every word comes back as written (a first word 'hetjob' is the separator instead)."""
    text = "#!/bin/sh\n#SBATCH " + " ".join(sbatch_quote(w) for w in words) + "\nsrun true\n"
    directives = outcome(read_directives, text)
    assert not isinstance(directives, InputError) and directives.words == tuple(words)


@budget(300)
@given(lines=st.lists(st.one_of(names, field, _word), max_size=6), junk=st.binary(max_size=40))
def test_any_script_gives_words_or_an_input_error(lines: list[str], junk: bytes) -> None:
    text = (
        "\n".join(f"#SBATCH {line}" for line in lines)
        + "\n"
        + junk.decode("utf-8", "surrogateescape")
    )
    result = outcome(read_directives, text, source="job.sh")
    if isinstance(result, InputError):
        assert "job.sh" in result.message


@pytest.mark.parametrize("space", NOT_C_SPACE)
def test_unicode_spaces_and_line_breaks_do_not_split_directives(space: str) -> None:
    # Regression: str.splitlines() and str.isspace() split where sbatch does not, so the wrapper
    # read another job name (and so another task's model) than the one sbatch gives the job.
    text = f"#!/bin/sh\n#SBATCH --job-name=a{space}--time=5 -p cpu\ntrue\n"
    assert read_directives(text).words == (f"--job-name=a{space}--time=5", "-p", "cpu")


def test_a_directive_with_a_megabyte_word_is_read(scratch: Path) -> None:
    text = f"#!/bin/sh\n#SBATCH --comment={MEGABYTE}\n#SBATCH -J big\ntrue\n"
    assert read_directives(text).words == (f"--comment={MEGABYTE}", "-J", "big")
    world, code, _ = submit(scratch, [_script(scratch, text)], known=["big"])
    assert code == 0 and world.argv[0][0] == "--time=00:10:00"


@budget(200)
@given(comment=st.one_of(field, names, st.text(max_size=60)))
@example(comment="advisor:x,limit=" + "9" * 5000)
@example(comment="advisor:x,limit=1,task=%ff%fe%")
@example(comment=" advisor:" * 10_000 + ",")
def test_tags_in_any_comment_parse_or_are_absent(comment: str) -> None:
    tag = parse_tag(comment)
    count(f"parse_tag: {'a tag' if tag else 'no tag'}")
    assert tag is None or isinstance(tag.limit_min, int)


# --- the export and the Lua plugin -------------------------------------------------------------

LUA = shutil.which("lua5.1")
NO_VAL = 4294967294
DRIVER = r"""
slurm = { SUCCESS = 0, ERROR = -1, NO_VAL = 4294967294 }
function slurm.log_user(fmt, ...) end
function slurm.log_error(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end
dofile(arg[1])
local function unhex(text)
  return (text:gsub("%x%x", function(pair) return string.char(tonumber(pair, 16)) end))
end
for line in io.lines() do
  local user, name = line:match("^(%x*) (%x*)$")
  local job = { name = unhex(name), user_name = unhex(user), partition = "cpu",
                time_limit = slurm.NO_VAL, time_min = slurm.NO_VAL }
  slurm_job_submit(job, { cpu = { flag_default = 1, max_time = 1440 } }, 1000)
  print(job.time_limit)
end
"""


def lua_limits(tmp: Path, export: dict[str, Any], jobs: list[tuple[str, str]]) -> list[int]:
    """The time limit the plugin gives each (user, job name), through the real file."""
    missing = pytest.fail if os.environ.get("ADVISOR_TEST_CLUSTER") == "1" else pytest.skip
    if LUA is None:
        missing("lua5.1 is not installed")
    path = write_export(tmp / "limits.json", export)
    Path(f"{path}.key").write_text(TEST_KEY.hex() + "\n")
    plugin = tmp / "job_submit.lua"
    text = (REPO / "slurm" / "job_submit.lua").read_text()
    plugin.write_text(text.replace('"/etc/slurm/advisor-limits.json"', json.dumps(str(path))))
    (tmp / "driver.lua").write_text(DRIVER)

    def hexed(text: str) -> str:
        return text.encode("utf-8", "surrogateescape").hex()

    done = subprocess.run(
        [LUA, str(tmp / "driver.lua"), str(plugin)],
        input="".join(f"{hexed(user)} {hexed(name)}\n" for user, name in jobs),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if "lua-cjson is not installed" in done.stderr or "module 'cjson' not found" in done.stderr:
        missing("lua-cjson is not installed")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [int(line) for line in done.stdout.split()]


def export_for(tasks: list[str], users: dict[str, dict[str, dict[str, int]]]) -> dict[str, Any]:
    """Task i predicted at (i + 1) hours: every task's limit differs from every other's."""
    seconds = {task: 3600.0 * (i + 1) for i, task in enumerate(tasks)}
    mine = {user: UserLimits(by_task, {}) for user, by_task in users.items()}
    doc = export_document(snapshot(seconds), quantile=0.95, margin=0.0, generated_at="now",
                          users=mine, key=TEST_KEY)  # fmt: skip
    validate(doc, "export", source="export")
    return doc


@budget(40)
@given(tasks=st.lists(names, min_size=1, max_size=6, unique=True),
       users=st.lists(names.filter(bool), min_size=2, max_size=2, unique=True))  # fmt: skip
@example(tasks=["a.b", "a", "b", "users", "tasks", '"', "../x", "é", "e\u0301"],
         users=["alice", "bob"])  # fmt: skip
@example(tasks=["\udcff", "ok"], users=["u\udcfe", "bob"])
@example(tasks=["align", "tasks"], users=["tasks", "users"])
def test_each_name_finds_only_its_own_limit(
    scratch: Path, tasks: list[str], users: list[str]
) -> None:
    user, other = users
    # The user's override of the first task: 7 minutes, for that user only.
    doc = export_for(tasks, {user: {tasks[0]: {"cpu": 7}}})
    jobs = [(other, task) for task in tasks] + [(user, tasks[0]), (other, tasks[0] + "x")]
    got = lua_limits(scratch, doc, jobs)
    count("job_submit.lua: every lookup found its own limit")
    overridden = doc["users"].get(user, {}).get("tasks", {})  # keyed by digests of the names
    for (job_user, name), limit in zip(jobs, got, strict=True):
        entry = doc["tasks"].get(name)
        expected = NO_VAL if entry is None or not name else entry["partitions"]["cpu"]["limit_min"]
        if job_user == user and name and name_key(user, name, TEST_KEY) in overridden:
            expected = 7
        assert limit == expected, (job_user, name)
    exported = [t for t in tasks if _utf8(t)]
    assert sorted(doc["tasks"]) == sorted(exported)  # every representable name is there
    limits = [doc["tasks"][t]["partitions"]["cpu"]["limit_min"] for t in exported]
    assert len(set(limits)) == len(limits)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_a_name_that_is_not_utf8_cannot_disable_the_plugin_for_everyone(scratch: Path) -> None:
    # Regression: one task (or user) name holding a surrogate was exported as a lone \udcff
    # escape, which lua-cjson refuses: the whole file was rejected and no job got a limit.
    doc = export_for(["\udcff", "align"], {"u\udcfe": {"align": {"cpu": 3}}})
    assert "\udcff" not in doc["tasks"] and "u\udcfe" not in doc["users"]
    assert lua_limits(scratch, doc, [("bob", "align")]) == [120]


def test_percent_encoded_tags_cannot_forge_fields() -> None:
    for name in NAMES:
        text = percent_encode(name)
        assert "," not in text and " " not in text and "=" not in text


@pytest.mark.parametrize("steps", ["²", "٣", "9" * 5000, "1" * 17, "0", "-1", ""])
def test_odd_step_counts_are_usage_errors(steps: str) -> None:
    # Regression: '²'.isdigit() is True but int('²') raised ValueError, and so did 5000 digits.
    argv = ["--advisor-insitu", "steps.csv", "--advisor-steps", steps, "job.sh"]
    error = rejected(parse_command_line, argv)
    assert "--advisor-steps" in error.message
