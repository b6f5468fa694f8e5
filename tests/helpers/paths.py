"""Where the repository and its test data are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEST_DATA = REPO / "tests" / "data"
#: The two whole Parallel Workloads Archive logs, xz-compressed (tests/data/traces/README.md);
#: tests use them unpacked through the ``pwa_logs`` fixture (tests/conftest.py).
PWA = TEST_DATA / "traces" / "pwa"
PWA_LOGS = {
    "kth": "KTH-SP2-1996-2.1-cln.swf",
    "curie": "CEA-Curie-2011-sample30k.swf",
}


def unpack_pwa_logs(folder: Path) -> dict[str, Path]:
    """The PWA logs unpacked into folder, by key of PWA_LOGS."""
    import lzma

    logs = {}
    for key, name in PWA_LOGS.items():
        logs[key] = folder / name
        logs[key].write_bytes(lzma.decompress((PWA / f"{name}.xz").read_bytes()))
    return logs
