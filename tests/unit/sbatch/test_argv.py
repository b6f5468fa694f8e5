"""The wrapper's argument split: sbatch's getopt rules, precedence, verbatim pass-through."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.advice.settings import parse_command_line
from advisor.errors import UsageError
from advisor.sbatch.argv import FLAGS, PREFIX, VALUED, Option, parse_options
from advisor.sbatch.options import LONG_OPTIONS, SHORT_OPTIONS, Arg, resolve_long
from advisor.sbatch.request import array_size, job_request, task_name
from advisor.sbatch.script import read_directives

NASTY = [
    "a b",
    "--",
    ":",
    "-",
    "it's",
    'say "hi"',
    "$HOME",
    "a;b",
    "x\ny",
    "--advisor-task",
    "-p",
    "",
    "tab\there",
    "é€",
]


def test_no_advisor_option_is_an_sbatch_option_or_a_prefix_of_one() -> None:
    # getopt_long takes any unique prefix: an advisor option that is an sbatch option or the
    # prefix of one captures what sbatch would read as its own (--task=4 is --tasks-per-node).
    # tests/integration/test_wrapper.py checks the same against the installed sbatch.
    for option in (*VALUED, *FLAGS):
        name = option[2:]
        assert option.startswith(PREFIX)
        assert not [o for o in LONG_OPTIONS if o.startswith(name) or name.startswith(o)], option


@pytest.mark.parametrize(
    ("argv", "option", "retired"),
    [(["--task=4", "job.sh"], Option("tasks-per-node", "4"), ("--task",)),
     (["--task", "4", "job.sh"], Option("tasks-per-node", "4"), ("--task",)),
     (["--input", "in.txt", "job.sh"], Option("input", "in.txt"), ()),
     (["--tasks-per-node=2", "job.sh"], Option("tasks-per-node", "2"), ())],
)  # fmt: skip
def test_old_advisor_names_reach_sbatch_as_sbatch_reads_them(
    argv: list[str], option: Option, retired: tuple[str, ...]
) -> None:
    # Regression: --task=4 was the advisor's --task, although sbatch reads it as
    # --tasks-per-node=4 (the job got another task's model and lost its tasks per node).
    cmd = parse_command_line(argv)
    assert cmd.sbatch.options == (option,) and cmd.sbatch.args == tuple(argv)
    assert cmd.advisor.task is None and cmd.advisor.inputs == ()
    assert cmd.retired == retired
    warning = cmd.retired_warning()
    assert (warning is None) == (not retired)
    if warning:
        assert "--advisor-task" in warning and "\n" not in warning


def test_retired_names_that_sbatch_rejects_are_named_once() -> None:
    cmd = parse_command_line(["--policy=tighten", "--dry-run", "--policy=x", "job.sh"])
    assert cmd.sbatch.invalid == ("--policy=tighten", "--dry-run", "--policy=x")
    assert cmd.retired == ("--policy", "--dry-run")
    assert cmd.advisor == parse_command_line(["job.sh"]).advisor


def test_every_short_option_names_a_long_one() -> None:
    assert set(SHORT_OPTIONS.values()) <= set(LONG_OPTIONS)
    assert LONG_OPTIONS["time"] is Arg.REQUIRED
    assert LONG_OPTIONS["parsable"] is Arg.NONE
    assert LONG_OPTIONS["nice"] is Arg.OPTIONAL


@pytest.mark.parametrize(
    ("name", "full"),
    [("time", "time"), ("part", "partition"), ("job", "job-name"), ("time-m", "time-min")],
)
def test_long_options_resolve_like_getopt(name: str, full: str) -> None:
    assert resolve_long(name) == full


@pytest.mark.parametrize("name", ["tim", "no", "nosuch"])
def test_ambiguous_or_unknown_long_options_are_invalid(name: str) -> None:
    cmd = parse_command_line([f"--{name}", "5", "job.sh"])
    assert cmd.sbatch.invalid == (f"--{name}",)
    assert cmd.sbatch.script == "5"  # getopt consumes no value for an option it rejects


@pytest.mark.parametrize(
    ("argv", "options", "script"),
    [
        (["-t", "10", "job.sh"], [Option("time", "10")], "job.sh"),
        (["-t10", "job.sh"], [Option("time", "10")], "job.sh"),
        (["--time=10", "job.sh"], [Option("time", "10")], "job.sh"),
        (["--time", "10", "job.sh"], [Option("time", "10")], "job.sh"),
        (
            ["-p", "a,b", "-J", "n", "job.sh"],
            [Option("partition", "a,b"), Option("job-name", "n")],
            "job.sh",
        ),
        (["--job-name=x y", "job.sh"], [Option("job-name", "x y")], "job.sh"),
        (["-vJname", "job.sh"], [Option("verbose"), Option("job-name", "name")], "job.sh"),
        (["-Hk", "job.sh"], [Option("hold"), Option("no-kill")], "job.sh"),
        (["--nice", "5"], [Option("nice")], "5"),  # an optional value must be attached
        (["--nice=5", "job.sh"], [Option("nice", "5")], "job.sh"),
        (
            ["--comment", "--advisor-task", "job.sh"],
            [Option("comment", "--advisor-task")],
            "job.sh",
        ),
        (["--", "-job.sh", "-t", "1"], [], "-job.sh"),
        (["job.sh", "-t", "10"], [], "job.sh"),
    ],
)
def test_options_and_script_are_found_where_sbatch_finds_them(
    argv: list[str], options: list[Option], script: str
) -> None:
    cmd = parse_command_line(argv)
    assert list(cmd.sbatch.options) == options
    assert cmd.sbatch.script == script
    assert cmd.sbatch.args == tuple(argv)


def test_no_script_means_stdin_and_wrap_has_none() -> None:
    assert parse_command_line(["-p", "cpu"]).sbatch.script is None
    wrapped = parse_command_line(["--wrap", "echo hi"])
    assert wrapped.sbatch.script is None
    assert wrapped.sbatch.options == (Option("wrap", "echo hi"),)


def test_advisor_options_are_removed_wherever_they_stand_before_the_script() -> None:
    argv = [
        "--advisor-task", "align", "-p", "cpu", "--advisor-input", "a.gz", "--advisor-dry-run",
        "--advisor-input=b", "--advisor-policy=tighten", "--advisor-quantile", "0.9",
        "--advisor-margin", "0.2", "--advisor-explain", "--advisor-pick", "earliest",
        "--advisor-db", "c.db", "--advisor-format", "json", "job.sh", "--advisor-task", "x",
    ]  # fmt: skip
    cmd = parse_command_line(argv)
    assert cmd.sbatch.args == ("-p", "cpu", "job.sh", "--advisor-task", "x")
    assert cmd.original == cmd.sbatch.args
    a = cmd.advisor
    assert (a.task, a.inputs, a.policy, a.quantile, a.margin) == (
        "align",
        ("a.gz", "b"),
        "tighten",
        0.9,
        0.2,
    )
    assert (a.dry_run, a.explain, a.pick, a.db, a.fmt) == (True, True, "earliest", "c.db", "json")


@pytest.mark.parametrize(
    "argv",
    [
        ["--advisor-policy", "always", "job.sh"],
        ["--advisor-pick", "latest", "job.sh"],
        ["--advisor-quantile", "1", "job.sh"],
        ["--advisor-quantile", "0", "job.sh"],
        ["--advisor-quantile", "nan", "job.sh"],
        ["--advisor-margin", "-0.1", "job.sh"],
        ["--advisor-task", " ", "job.sh"],
        ["--advisor-task"],
    ],
)
def test_bad_advisor_values_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        parse_command_line(argv)


def test_added_options_go_just_before_the_script_or_the_separator() -> None:
    plain = parse_command_line(["-p", "cpu", "job.sh", "a"]).sbatch
    assert plain.with_options(["--time=5"]) == ("-p", "cpu", "--time=5", "job.sh", "a")
    separated = parse_command_line(["-p", "cpu", "--", "job.sh"]).sbatch
    assert separated.with_options(["--time=5"]) == ("-p", "cpu", "--time=5", "--", "job.sh")
    stdin = parse_command_line(["-p", "cpu"]).sbatch
    assert stdin.with_options(["--time=5"]) == ("-p", "cpu", "--time=5")


def test_heterogeneous_jobs_are_flagged() -> None:
    assert parse_command_line(["-p", "cpu", ":", "-p", "fat", "job.sh"]).sbatch.hetjob


# Each case was checked against sbatch 22.05.8 on the test cluster (the JobName it recorded).
SCRIPT = """#!/bin/bash
# a comment
#SBATCH -t 10 --job-name="my job"   # trailing comment
#SBATCH --comment='it''s' -p a,b
  #SBATCH --time=99
#SBATCH -J a#b -J a\\#b -J "a#b" -J a\\"b
echo start
#SBATCH --time=1
"""


def test_directives_follow_sbatch_quoting_and_stop_at_the_first_command() -> None:
    directives = read_directives(SCRIPT)
    assert directives.words == (
        "-t", "10", "--job-name=my job", "--comment=its", "-p", "a,b", "-J", "a",
    )  # fmt: skip
    options, invalid = parse_options(directives.words)
    assert invalid == ()
    assert Option("time", "10") in options


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("#SBATCH --job-name=a\\#b", ("--job-name=a#b",)),
        ('#SBATCH --job-name="a#b"', ("--job-name=a#b",)),
        ('#SBATCH --job-name=a\\"b', ('--job-name=a"b',)),
        ("#SBATCH --job-name=out\\ file", ("--job-name=out", "file")),  # sbatch rejects 'file'
        ("#SBATCH -J x -J y", ("-J", "x", "-J", "y")),
    ],
)
def test_directive_words_match_what_sbatch_recorded(line: str, words: tuple[str, ...]) -> None:
    assert read_directives(f"#!/bin/sh\n{line}\ntrue\n").words == words


def test_directives_after_hetjob_are_ignored_and_flagged() -> None:
    found = read_directives("#!/bin/sh\n#SBATCH -t 5\n#SBATCH hetjob\n#SBATCH -t 9\n")
    assert found.words == ("-t", "5")
    assert found.hetjob


def test_unmatched_quote_is_an_input_error() -> None:
    with pytest.raises(Exception, match="unmatched"):
        read_directives('#SBATCH --comment="oops\n')


@pytest.mark.parametrize(
    ("cli", "env", "script", "origin", "value"),
    [
        (["-t", "5"], {"SBATCH_TIMELIMIT": "6"}, ["-t", "7"], "command line", "5"),
        ([], {"SBATCH_TIMELIMIT": "6"}, ["-t", "7"], "SBATCH_TIMELIMIT", "6"),
        ([], {}, ["-t", "7", "--time=8"], "script", "8"),
        (["-t", "5", "--time=4"], {}, [], "command line", "4"),
    ],
)
def test_precedence_is_command_line_then_environment_then_script(
    cli: list[str], env: dict[str, str], script: list[str], origin: str, value: str
) -> None:
    script_options, _ = parse_options(script)
    request = job_request(parse_command_line([*cli, "job.sh"]).sbatch.options, env, script_options)
    assert request.time is not None
    assert (request.time.origin, request.time.value) == (origin, value)


def test_partitions_and_task_name() -> None:
    script_options, _ = parse_options(["-J", "from-script", "-p", "x"])
    request = job_request(
        parse_command_line(["-p", "a,b,a", "j.sh"]).sbatch.options, {}, script_options
    )
    assert request.partitions == ("a", "b")
    assert task_name(None, request, "dir/j.sh") == "from-script"
    assert task_name("explicit", request, "dir/j.sh") == "explicit"
    bare = job_request((), {}, ())
    assert task_name(None, bare, "dir/j.sh") == "j.sh"
    # classic Snakemake's job script: sbatch names the job after it, the task is its rule
    assert task_name(None, bare, ".snakemake/tmp.x/snakejob.bwa_map.17.sh") == "bwa_map"
    env = job_request((), {"SBATCH_JOB_NAME": "env-name"}, script_options)
    assert task_name(None, env, "j.sh") == "env-name"


@pytest.mark.parametrize(
    ("spec", "tasks"),
    [("1-100", 100), ("0-15:4", 4), ("1,3,5-7", 5), ("1-3%1", 3), ("7", 1), ("0-9:3%2", 4),
     ("5-1", 1), ("a-b", 1), ("1-2:0", 1), ("", 1)],
)  # fmt: skip
def test_an_arrays_size_is_its_task_count_and_a_bad_spec_counts_one(spec: str, tasks: int) -> None:
    assert array_size(spec) == tasks


def test_an_array_from_any_origin_is_the_jobs_task_count() -> None:
    script_options, _ = parse_options(["--array=0-9"])
    assert job_request((), {}, script_options).tasks == 10
    cli = parse_command_line(["-a", "1-4%2", "j.sh"]).sbatch.options
    assert job_request(cli, {"SBATCH_ARRAY_INX": "1-50"}, script_options).tasks == 4
    assert job_request((), {"SBATCH_ARRAY_INX": "1-50"}, script_options).tasks == 50
    assert job_request((), {}, ()).tasks == 1


# --- property: what reaches sbatch is the input minus advisor options -------------------------

_values = st.one_of(st.sampled_from(NASTY), st.text(min_size=0, max_size=12))
# --help and -h are the advisor's own (they submit nothing either way).
_long_names = st.sampled_from(sorted(set(LONG_OPTIONS) - {"help"}))
_short_letters = st.sampled_from(sorted(set(SHORT_OPTIONS) - {"h"}))


@st.composite
def sbatch_option(draw: st.DrawFn) -> tuple[list[str], Option]:
    if draw(st.booleans()):
        name = draw(_long_names)
        kind = LONG_OPTIONS[name]
        if kind is Arg.NONE:
            return [f"--{name}"], Option(name)
        value = draw(_values)
        if kind is Arg.OPTIONAL:
            return (
                ([f"--{name}={value}"], Option(name, value))
                if draw(st.booleans())
                else ([f"--{name}"], Option(name))
            )
        return ([f"--{name}={value}"] if draw(st.booleans()) else [f"--{name}", value]), Option(
            name, value
        )
    letter = draw(_short_letters)
    name = SHORT_OPTIONS[letter]
    kind = LONG_OPTIONS[name]
    if kind is not Arg.REQUIRED:
        return [f"-{letter}"], Option(name)
    value = draw(_values)
    if value and draw(st.booleans()):
        return [f"-{letter}{value}"], Option(name, value)
    return [f"-{letter}", value], Option(name, value)


_advisor = st.sampled_from(
    [["--advisor-task", "t"], ["--advisor-task=t"], ["--advisor-input", "in.gz"],
     ["--advisor-dry-run"], ["--advisor-explain"], ["--advisor-policy", "advise"],
     ["--advisor-quantile=0.5"], ["--advisor-margin", "0"], ["--advisor-pick", "earliest"]]
)  # fmt: skip
_script = st.text(min_size=1, max_size=10).filter(lambda s: not s.startswith("-") and s != ":")


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(st.one_of(sbatch_option(), _advisor), max_size=8),
    script=_script,
    script_args=st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=8)), max_size=4),
)
def test_sbatch_gets_exactly_the_users_arguments(
    items: list[tuple[list[str], Option] | list[str]], script: str, script_args: list[str]
) -> None:
    argv: list[str] = []
    expected: list[str] = []
    options: list[Option] = []
    for item in items:
        if isinstance(item, tuple):
            argv.extend(item[0])
            expected.extend(item[0])
            options.append(item[1])
        else:
            argv.extend(item)
    argv += [script, *script_args]
    expected += [script, *script_args]
    cmd = parse_command_line(argv)
    assert list(cmd.sbatch.args) == expected
    assert list(cmd.sbatch.options) == options
    assert cmd.sbatch.invalid == ()
    assert cmd.sbatch.script == (None if any(o.name == "wrap" for o in options) else script)
    added = ("--time=00:05:00", "--comment=advisor:wrapper,action=set,limit=5")
    final = cmd.sbatch.with_options(added)
    at = cmd.sbatch.options_end
    assert final[at : at + len(added)] == added
    assert list(final[:at] + final[at + len(added) :]) == expected
