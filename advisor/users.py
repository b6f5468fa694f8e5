"""The user the advisor acts for: the name of the process's user.

The wrapper records its advice under it, and ``advisor plan`` and ``advisor predict`` read the
models as this user sees them (a user's own runs move only that user's predictions).
"""

from __future__ import annotations

import os
import pwd


def current_user() -> str:
    """The name of the process's real user: the one who submits."""
    return pwd.getpwuid(os.getuid()).pw_name
