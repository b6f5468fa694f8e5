"""Users' job names as the export for slurmctld's plugin holds them: a keyed digest of (user, name).

The export (services/export.py) is read by slurmctld's Lua plugin as user slurm, and a job name
is what a user typed (it can hold a path, a sample id, a token).  Where a job name is a key
there, the key is ``name_key(user, name, key)``: BLAKE2s (RFC 7693) with 12 bytes of output,
the personalisation ``advname2`` and a 32-byte secret key, over the UTF-8 bytes of the user
name, a NUL, and the job name as the cache stores it (advisor.text.storable).  The plugin
computes it from the job it is given (a pure Lua 5.1 twin: no C library is guaranteed inside
slurmctld); the tests check both against hashlib.

The key is a file of its own beside the export (``<export>.key``), readable by root and
slurmctld's group only, like the export itself: nobody else can test a guess of a name against
the digests (an unkeyed digest let a dictionary of 26 million likely names recover two planted
ones in 93 s on one core, issue 31 N4), even where the export itself is copied somewhere users
can read.  The export says which key it was made with (``key_id``), so the plugin ignores the
users' entries rather than compute digests with another key.
"""

from __future__ import annotations

from advisor.text import storable

#: Written into the export, so a reader knows how keys are made.
NAME_SCHEME = "blake2s-96-keyed:advname2"
_PERSON = b"advname2"
_SIZE = 12
#: The key's length in bytes (BLAKE2s takes up to 32).
KEY_BYTES = 32


def name_key(user: str, name: str, key: bytes) -> str:
    """The key of a user's job name in the export (24 hex digits), under the site's key."""
    data = storable(user).encode("utf-8") + b"\0" + storable(name).encode("utf-8")
    return blake2s_hex(data, digest_size=_SIZE, person=_PERSON, key=key)


def key_id(key: bytes) -> str:
    """Which key made an export's digests (8 hex digits; says nothing about the key)."""
    return blake2s_hex(key, digest_size=4, person=b"advkeyid")


def blake2s_hex(
    data: bytes, *, digest_size: int = 32, person: bytes = b"", key: bytes = b""
) -> str:
    """hashlib.blake2s(...).hexdigest(), without hashlib's 5 ms of loading OpenSSL.

    The wrapper pays for every module on the submit path; hashlib takes its blake2s from the
    interpreter's own _blake2 module, which loads in 0.2 ms.
    """
    try:
        from _blake2 import blake2s
    except ImportError:  # an interpreter without it
        from hashlib import blake2s
    return blake2s(data, digest_size=digest_size, person=person, key=key).hexdigest()
