"""A stand-in for ``sacct`` in tests that run ``advisor update`` as a separate process.

Answers ``--starttime``/``--endtime`` window queries from a dump (env ``FAKE_SACCT_DUMP``: a
header line of field names, then rows, all joined by the unit separator 0x1f), printing the
jobs active in the window with the requested ``--format`` and ``--delimiter``, after sleeping
``FAKE_SACCT_DELAY`` seconds.  A field the dump does not have prints empty (as sacct prints
MaxRSS on an allocation row).  Standard library only.
"""

import os
import sys
import time
from datetime import datetime

SEP = "\x1f"


def main(argv: list[str]) -> int:
    options = dict(arg[2:].split("=", 1) for arg in argv if arg.startswith("--") and "=" in arg)
    start = datetime.fromisoformat(options["starttime"])
    end = datetime.fromisoformat(options["endtime"])
    wanted = options["format"].split(",")
    delimiter = options.get("delimiter", "|")
    time.sleep(float(os.environ.get("FAKE_SACCT_DELAY", "0")))
    with open(os.environ["FAKE_SACCT_DUMP"], encoding="utf-8") as dump:
        fields = dump.readline().rstrip("\n").split(SEP)
        for line in dump:
            row = dict(zip(fields, line.rstrip("\n").split(SEP), strict=True))
            began = row["Start"] if row["Start"] != "Unknown" else row["Submit"]
            ended = row["End"]
            if datetime.fromisoformat(began) >= end:
                continue
            if ended != "Unknown" and datetime.fromisoformat(ended) < start:
                continue
            sys.stdout.write(delimiter.join(row.get(name, "") for name in wanted) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
