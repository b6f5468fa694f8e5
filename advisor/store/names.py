"""Users' job names as the files everyone reads hold them: a digest of (user, name).

The published copy (services/publish.py) and the export for job_submit.lua are readable by every
user, and a job name is what a user typed (it can hold a path, a sample id, a token).  Where a
job name is a key there, the key is ``name_key(user, name)``: BLAKE2s (RFC 7693) with 12 bytes
of output and the personalisation ``advname1``, over the UTF-8 bytes of the user name, a NUL,
and the job name as the cache stores it (advisor.text.storable).  The wrapper computes it from
its own job, and slurm/job_submit.lua from the job it is given (a pure Lua 5.1 twin of the same
function: no C library is guaranteed inside slurmctld); the tests check both against hashlib.

What it protects: nobody reads another user's names, and a name cannot be listed or recovered
from the files; 24 hex characters keep every key short, so Lua hashes all of a key's bytes.
What it does not: anyone can compute the digest, so a user who guesses another user's exact
job name can check the guess.  A key only root and slurm hold would stop that for the export,
but the wrapper runs as the user and must compute the same keys from the copy, so the copy
would still allow the check; guessing needs the exact name, and tells only that name.
"""

from __future__ import annotations

from advisor.text import storable

#: Written into the published copy and the export, so a reader knows how keys are made.
NAME_SCHEME = "blake2s-96:advname1"
_PERSON = b"advname1"
_SIZE = 12


def name_key(user: str, name: str) -> str:
    """The key of a user's job name in the published copy and the export (24 hex digits)."""
    data = storable(user).encode("utf-8") + b"\0" + storable(name).encode("utf-8")
    return blake2s_hex(data, digest_size=_SIZE, person=_PERSON)


def blake2s_hex(data: bytes, *, digest_size: int = 32, person: bytes = b"") -> str:
    """hashlib.blake2s(...).hexdigest(), without hashlib's 5 ms of loading OpenSSL.

    The wrapper pays for every module on the submit path; hashlib takes its blake2s from the
    interpreter's own _blake2 module, which loads in 0.2 ms.
    """
    try:
        from _blake2 import blake2s
    except ImportError:  # an interpreter without it
        from hashlib import blake2s
    return blake2s(data, digest_size=digest_size, person=person).hexdigest()
