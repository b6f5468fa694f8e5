"""What the advisor reads from the local slurm.conf: the cluster's name.

A saved dump without a Cluster field belongs to the cluster the advisor runs on, which is the
one Slurm's own tools would name: ``ClusterName`` in ``$SLURM_CONF`` (else
``/etc/slurm/slurm.conf``).  Keys are case-insensitive, ``#`` starts a comment, and the last
setting wins, as in Slurm's parser; ``include`` files are not followed (ClusterName belongs
in the main file).  Slurm keeps cluster names in lower case, so this does too.  It is the one
reading of ClusterName: the wrapper records its advice under it (advisor.wrapper.effects), on the
submit path, where pathlib is not loaded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from advisor.lite import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_CONF = "/etc/slurm/slurm.conf"
_CLUSTER = re.compile(r"\s*ClusterName\s*=\s*(\S+)", re.IGNORECASE)


def conf_file(environ: Mapping[str, str] | None = None) -> str:
    """``$SLURM_CONF``, else Slurm's default location."""
    environ = os.environ if environ is None else environ
    return environ.get("SLURM_CONF") or DEFAULT_CONF


def local_cluster_name(environ: Mapping[str, str] | None = None) -> str | None:
    """ClusterName of the local slurm.conf, or None (no file, unreadable, or not set)."""
    try:
        with open(conf_file(environ), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    name = None
    for line in text.splitlines():
        match = _CLUSTER.match(line.split("#", 1)[0])
        if match:
            name = match.group(1).lower()
    return name


_SETTING = re.compile(r"\s*(\w+)\s*=\s*(\S*)")
_LUA_EXPORT = re.compile(r'^\s*local\s+EXPORT_PATH\s*=\s*"([^"]*)"', re.MULTILINE)


def conf_settings(path: Path) -> dict[str, str]:
    """The ``Key=value`` settings of a slurm.conf, keys in lower case, the last one winning.

    Raises OSError when the file cannot be read.
    """
    settings: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _SETTING.match(line.split("#", 1)[0])
        if match:
            settings[match.group(1).lower()] = match.group(2)
    return settings


def lua_export_path(script: Path) -> str | None:
    """The limits file a job_submit.lua reads (its ``local EXPORT_PATH``), or None."""
    match = _LUA_EXPORT.search(script.read_text(encoding="utf-8", errors="replace"))
    return match.group(1) if match else None
