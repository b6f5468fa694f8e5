"""Opening the cache, migrating it, and the transaction discipline.

Writers take ``BEGIN IMMEDIATE`` so two writers queue on the busy timeout instead of failing
half-way; the database runs in WAL mode so readers (the sbatch wrapper) never wait for a writer
and never see a half-written transaction.  slurmctld's Lua plugin does not read this file: it
reads a JSON export (docs/site.md), because a WAL database is unreadable to a user who cannot
write its directory; for the same reason users' wrappers read a copy (services/publish.py).
Paths are plain strings here (os.path): the wrapper opens the cache on every submission, and
pathlib costs it ~4 ms to import.  For the same reason SQLite comes from ``_sqlite3``, the C
module the ``sqlite3`` package re-exports (the same connect, Connection and errors): the package
adds ``datetime`` and its default adapters, ~2 ms of every submission, and the cache stores
times as text, so they never apply.
"""

from __future__ import annotations

import _sqlite3 as sqlite3
import os

from advisor.errors import CacheError
from advisor.lite import TYPE_CHECKING
from advisor.text import percent_encode

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Any

    import sqlite_utils

#: len(advisor.store.migrations.MIGRATIONS), written out: opening a cache to read (the sbatch
#: wrapper) checks the version without loading the migrations' SQL; tests/unit/store/test_store.py
#: holds the two equal.
SCHEMA_VERSION = 12
APP_ID = 0x5A11AD01  # PRAGMA application_id: refuses to treat a foreign SQLite file as a cache
#: The published copies (services/publish.py): a directory users' ADVISOR_DB names, holding the
#: file every user reads and one file per user, which Store.open attaches as ``mine``.
SHARED_COPY = "shared.db"
PUBLISHED_LAYOUT = "shared/2"
USER_LAYOUT = "user/2"
#: The tables of users' own rows: in each user's file, not in the shared one.
USER_TABLES = frozenset({"history_keys", "advice", "accounting_jobs", "watermarks",
                         "user_task_models"})  # fmt: skip
#: Tables in both: the shared file holds their rows of no user (user ''), each user's file
#: their own (a published copy reads a user's from ``mine``: advisor.store.memory_models).
SPLIT_TABLES = frozenset({"memory_models"})


def _null(value: None) -> None:
    return value


# Binding a parameter that is not exactly an int, float, str or bytearray (None, a bool) asks
# the adapter registry, then the protocol and the object itself for an adaptation: ~0.4 us
# each in Python 3.11, more than binding two strings, and an ingested job binds about ten of
# them (issue #15).  Found in the registry, they cost a lookup and a call; what is bound is
# the same (None as NULL, a bool as the integer 0 or 1).
sqlite3.register_adapter(type(None), _null)
sqlite3.register_adapter(bool, int)


def db_location(explicit: str | os.PathLike[str] | None = None) -> str:
    """``--db`` first, then ``$ADVISOR_DB``, then the per-user data directory."""
    if explicit:
        return os.path.normpath(os.path.expanduser(os.fspath(explicit)))
    if os.environ.get("ADVISOR_DB"):
        return os.path.normpath(os.path.expanduser(os.environ["ADVISOR_DB"]))
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return os.path.join(base, "slurm-advisor", "cache.db")


def default_db_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """db_location as a Path."""
    from pathlib import Path

    return Path(db_location(explicit))


def cache_error(where: object, error: sqlite3.Error) -> CacheError:
    """A SQLite failure on the cache as a one-line error that says what to do next."""
    text = str(error)
    if "locked" in text or "busy" in text:
        hint = "another advisor is writing; retry shortly"
    elif "readonly" in text or "unable to open" in text:  # not this user's to write (or read)
        hint = "users read the copy 'advisor publish' writes (contrib/site/README.md)"
    else:
        hint = "move the file away and re-create the cache"
    return CacheError(f"cache {where}: {text}", hint=hint)


class Store:
    """An open cache: ``db`` for queries, ``write()`` for transactions."""

    def __init__(self, conn: sqlite3.Connection, path: str | None, *, readonly: bool) -> None:
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self._db: sqlite_utils.Database | None = None
        self._published: bool | None = None

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        readonly: bool = False,
        busy_timeout_s: float = 30.0,
        uid: int | None = None,
    ) -> Store:
        """Open (and on first use create and migrate) the cache at path, or in memory for ':memory:'.

        A directory is the published copies (services/publish.py): read-only, its shared file
        with the file of uid (default: this process's) attached.
        """
        memory = str(path) == ":memory:"
        where = None if memory else db_location(path)
        if where is not None and os.path.isdir(where):
            return cls._open_published(where, readonly, busy_timeout_s, uid)
        try:
            if memory:
                conn = sqlite3.connect(
                    ":memory:",
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=busy_timeout_s,
                )
            elif readonly:
                if where is None or not os.path.exists(where):
                    raise CacheError(
                        f"cache {where} does not exist",
                        hint="create it with 'advisor demo' or an import",
                    )
                conn = sqlite3.connect(
                    _ro_uri(where), uri=True, isolation_level=None, timeout=busy_timeout_s
                )
            elif where is not None:
                _create_private(where)
                conn = sqlite3.connect(where, isolation_level=None, timeout=busy_timeout_s)
            # connect's timeout is SQLite's busy timeout; foreign keys only matter to writes
            # (a read-only open, every submission's, runs one statement fewer for each).
            if not readonly:
                conn.execute("PRAGMA foreign_keys = ON")
            store = cls(conn, where, readonly=readonly)
            if store.published:
                if not readonly:
                    raise CacheError(
                        f"cache {where} is a copy 'advisor publish' wrote, for users to read",
                        hint="write to the working cache (contrib/site/README.md)",
                    )
                raise CacheError(
                    f"cache {where} is a file of 'advisor publish', not the directory users read",
                    hint="users' ADVISOR_DB names the directory publish writes "
                    "(contrib/site/README.md)",
                )
            if not readonly:
                current = conn.execute("PRAGMA journal_mode").fetchone()[0]
                if not memory and current != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = NORMAL")
                store.migrate()
            store.check_version()
        except sqlite3.DatabaseError as error:
            raise cache_error(where or ":memory:", error) from None
        except OSError as error:  # its directory cannot be made (a user without a home)
            raise CacheError(
                f"cache {where}: {error.strerror}: {error.filename}",
                hint="give a cache you may write with --db or $ADVISOR_DB",
            ) from None
        return store

    @classmethod
    def _open_published(
        cls, where: str, readonly: bool, busy_timeout_s: float, uid: int | None
    ) -> Store:
        """The published copies: shared.db, and the caller's own file attached as ``mine``."""
        if not readonly:
            raise CacheError(
                f"cache {where} is the directory of copies 'advisor publish' wrote, for users",
                hint="write to the working cache (contrib/site/README.md)",
            )
        shared = os.path.join(where, SHARED_COPY)
        own = os.path.join(where, f"{os.getuid() if uid is None else uid}.db")
        try:
            if not os.path.exists(shared):
                raise CacheError(
                    f"cache {where}: no {SHARED_COPY} in it",
                    hint="run 'advisor publish --out' into it (contrib/site/README.md)",
                )
            conn = sqlite3.connect(_ro_uri(shared), uri=True, isolation_level=None,
                                   timeout=busy_timeout_s)  # fmt: skip
            store = cls(conn, where, readonly=True)
        except sqlite3.DatabaseError as error:
            raise cache_error(where, error) from None
        try:
            store._attach_own(own, shared)
        except BaseException:
            conn.close()
            raise
        store._published = True
        return store

    def _attach_own(self, own: str, shared: str) -> None:
        """Check the shared file; attach the user's own file as ``mine`` (empty tables without)."""
        conn = self.conn
        try:
            self.check_version()
            rows = dict(conn.execute("SELECT key, value FROM publication").fetchall())
            if rows.get("layout") != PUBLISHED_LAYOUT:
                raise CacheError(f"cache {shared}: not a shared copy of this advisor",
                                 hint="publish again (contrib/site/README.md)")  # fmt: skip
            if os.path.exists(own):
                conn.execute("ATTACH DATABASE ? AS mine", (_ro_uri(own),))
                layout = conn.execute("SELECT value FROM mine.publication WHERE key = 'layout'")
                if (layout.fetchone() or (None,))[0] != USER_LAYOUT:
                    raise CacheError(f"cache {own}: not a user's copy of this advisor",
                                     hint="publish again (contrib/site/README.md)")  # fmt: skip
            else:  # nothing of this user's yet: their tables, empty
                conn.execute("ATTACH DATABASE ':memory:' AS mine")
                from advisor.lite import json_loads

                for statement in json_loads(rows.get("user_schema", "[]")):
                    conn.execute(str(statement).replace("CREATE TABLE ", "CREATE TABLE mine.", 1)
                                 .replace("CREATE INDEX ", "CREATE INDEX mine.", 1))  # fmt: skip
        except sqlite3.DatabaseError as error:
            raise cache_error(self.path, error) from None

    @property
    def db(self) -> sqlite_utils.Database:
        """sqlite-utils over the same connection, for bulk inserts and introspection.

        Imported on first use: it loads numpy/pandas when they are installed, which the
        sbatch wrapper's submit path must not pay for.
        """
        if self._db is None:
            import sqlite_utils

            self._db = sqlite_utils.Database(self.conn)
        return self._db

    @property
    def published(self) -> bool:
        """True for the copies 'advisor publish' writes (services/publish.py).

        The shared file and the caller's own, holding only what the wrapper needs.
        """
        if self._published is None:
            row = self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'publication'"
            ).fetchone()
            self._published = row is not None
        return self._published

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        """The schema version stored in the file."""
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def check_version(self) -> None:
        """Refuse a cache this program does not understand."""
        app_id = int(self.conn.execute("PRAGMA application_id").fetchone()[0])
        version = self.version
        if app_id not in (0, APP_ID) or (app_id == 0 and version):
            raise CacheError(f"{self.path}: not a slurm-advisor cache (application_id {app_id})")
        if version > SCHEMA_VERSION:
            raise CacheError(
                f"cache {self.path} has schema version {version}, newer than this advisor "
                f"understands ({SCHEMA_VERSION})",
                hint="upgrade slurm-advisor",
            )
        if version < SCHEMA_VERSION:
            raise CacheError(
                f"cache {self.path} has schema version {version}, expected {SCHEMA_VERSION}",
                hint="run any advisor command that writes (e.g. 'advisor cluster --save') to migrate",
            )

    def migrate(self) -> None:
        """Apply every missing migration, each in its own transaction."""
        from advisor.store.migrations import MIGRATIONS

        version = self.version
        app_id = int(self.conn.execute("PRAGMA application_id").fetchone()[0])
        if (
            version == 0
            and app_id == 0
            and self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        ):
            raise CacheError(f"{self.path}: not a slurm-advisor cache (it has foreign tables)")
        for number in range(version, SCHEMA_VERSION):
            with self.write():
                if self.version != number:  # another writer migrated meanwhile
                    continue
                for statement in _statements(MIGRATIONS[number]):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA application_id = {APP_ID}")
                self.conn.execute(f"PRAGMA user_version = {number + 1}")

    def write(self) -> AbstractContextManager[Store]:
        """A write transaction: all of it is committed, or none of it.

        Nested use joins the outer transaction as a savepoint.  (A class, not
        contextlib.contextmanager: the sbatch wrapper would import contextlib for it.)
        """
        if self.readonly:
            raise CacheError(f"cache {self.path} is open read-only")
        return _Write(self)

    def read(self) -> AbstractContextManager[Store]:
        """A read transaction: every query inside sees the same committed state.

        Without it each statement is its own transaction, and two queries can straddle a
        writer's commit (tests/integration/test_privilege.py saw 7 % of such pairs torn).
        Inside a write (or another read) it joins that one: already consistent.
        """
        return _Read(self)

    def query(
        self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()
    ) -> list[dict[str, Any]]:
        """Rows of a parameterised query as dicts."""
        cursor = self.conn.execute(sql, params)
        names = [column[0] for column in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


#: A new cache and the directory made for it: the administrator's alone.  The cache holds every
#: user's argv (--export values, --wrap commands), job names, comments and accounts.
PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def _create_private(path: str) -> None:
    """Create the cache file (and its directory) readable by its owner only, if it is new.

    Whatever the umask or the service manager set: the directory is made 0700, the file is
    created 0600 before SQLite opens it, and SQLite gives its -wal and -shm files the mode of
    the database file.  An existing file keeps its mode (``advisor doctor`` flags one that
    others can read).
    """
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=PRIVATE_DIR, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)


def _ro_uri(path: str) -> str:
    """A read-only SQLite URI of a file."""
    return f"file://{percent_encode(os.path.realpath(path), safe='/')}?mode=ro"


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (it holds no literals with ';')."""
    return [part.strip() for part in script.split(";") if part.strip()]


class _Write:
    """Store.write: BEGIN IMMEDIATE ... COMMIT, or a savepoint inside an open transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.savepoint: str | None = None

    def __enter__(self) -> Store:
        store, conn = self.store, self.store.conn
        if conn.in_transaction:
            self.savepoint = f"nested_{id(store):x}_{conn.total_changes}"
            conn.execute(f"SAVEPOINT {self.savepoint}")
            return store
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise CacheError(
                f"cache {store.path}: {error}", hint="another advisor is writing; retry shortly"
            ) from None
        return store

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        conn = self.store.conn
        if self.savepoint is not None:
            if kind is not None:
                conn.execute(f"ROLLBACK TO SAVEPOINT {self.savepoint}")
            conn.execute(f"RELEASE SAVEPOINT {self.savepoint}")
        elif kind is not None:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        else:
            conn.execute("COMMIT")


class _Read:
    """Store.read: BEGIN ... COMMIT, unless a transaction is open already."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.began = False

    def __enter__(self) -> Store:
        conn = self.store.conn
        if not conn.in_transaction:
            conn.execute("BEGIN")
            self.began = True
        return self.store

    def __exit__(self, *exc: object) -> None:
        if self.began and self.store.conn.in_transaction:
            self.store.conn.execute("COMMIT")
