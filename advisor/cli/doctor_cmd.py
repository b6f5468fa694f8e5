"""``advisor doctor``: checks an administrator runs after setting the advisor up."""

from __future__ import annotations

import argparse

from advisor.cli.common import positive_int
from advisor.render import Result, Table
from advisor.services.doctor import EXPORT, PUBLISHED, DoctorRequest, run_doctor


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add the command."""
    parser = sub.add_parser(
        "doctor",
        parents=parents,
        help="check the site set-up: cache, published copy, export, Lua plugin, update age",
        description="One line per check, ok, warn or fail, with what to do: the cache is there, "
        "readable by its owner only, and of this advisor's schema version; the published "
        "copies' shared file is readable by every user and each user's own file by that user "
        "only; the limits export and its key are valid, fresh, readable by the slurm user and "
        "by no other; slurm.conf has "
        "JobSubmitPlugins=lua and the job_submit.lua beside it reads that export; 'advisor "
        "update' ran recently. Exit code 1 when a check fails. Reads files only.",
    )
    parser.add_argument(
        "--published",
        default=PUBLISHED,
        metavar="DIR",
        help=f"the directory of the copies users read (default {PUBLISHED})",
    )
    parser.add_argument(
        "--export",
        default=EXPORT,
        metavar="PATH",
        help=f"the limits file the plugin reads (default {EXPORT})",
    )
    parser.add_argument(
        "--slurm-conf",
        metavar="FILE",
        help="slurm.conf (default $SLURM_CONF, else /etc/slurm/slurm.conf)",
    )
    parser.add_argument("--slurm-user", default="slurm", help="slurmctld's user (default slurm)")
    parser.add_argument(
        "--max-update-age",
        type=positive_int,
        default=24,
        metavar="HOURS",
        help="warn when 'advisor update' last ran longer ago (default 24)",
    )
    parser.add_argument(
        "--max-export-age",
        type=positive_int,
        default=48,
        metavar="HOURS",
        help="warn when the export is older (default 48)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Result:
    """Check and list; exit 1 on a failure."""
    request = DoctorRequest(
        db=getattr(args, "db", None),
        published=args.published,
        export=args.export,
        slurm_conf=args.slurm_conf,
        slurm_user=args.slurm_user,
        max_update_age_s=args.max_update_age * 3600,
        max_export_age_s=args.max_export_age * 3600,
    )
    found = run_doctor(request)
    failed, warned = found.failed, found.warnings
    summary = f"{failed} failed, {warned} warnings" if failed or warned else "all checks ok"
    return Result(
        data=found.to_json(),
        tables=(
            Table(
                [c._asdict() for c in found.checks], columns=("check", "status", "detail", "todo")
            ),
        ),
        notes=(summary,),
        exit_code=1 if failed else 0,
    )
