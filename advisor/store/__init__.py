"""The SQLite cache: the only module family that talks to the database."""

from advisor.store.connection import SCHEMA_VERSION, Store, default_db_path

__all__ = ["SCHEMA_VERSION", "Store", "default_db_path"]
