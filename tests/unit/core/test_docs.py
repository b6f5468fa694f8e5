"""The repository's documents: a README a newcomer finishes, links that lead somewhere.

The manual's own links and anchors are checked by ``mkdocs build --strict`` (tests/run.sh); the
files outside docs/ (README.md, CONTRIBUTING.md, CHANGELOG.md) are not part of that build, so
their links are checked here. That every command is in the README's table and in a manual page
is tests/unit/cli/test_cli.py's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from tests.helpers.paths import REPO

TOP_LEVEL = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")
#: A Markdown link's target: [text](target), not an image and not inside code.
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """The ids Python-Markdown's toc extension gives the page's headings (as mkdocs does)."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return {slugify(re.sub(r"[`*]", "", title), "-") for title in HEADING.findall(text)}


def links(document: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", document.read_text(), flags=re.DOTALL)
    return LINK.findall(re.sub(r"`[^`\n]*`", "", text))


def test_the_readme_is_short_enough_to_finish() -> None:
    assert len((REPO / "README.md").read_text().splitlines()) <= 150


def test_the_readme_opens_with_the_two_set_up_commands_and_ci_runs_the_second() -> None:
    block = re.search(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
    assert block is not None
    assert block.group(1).splitlines() == [
        "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/advisor demo",
        "bash tests/run.sh",
    ]
    assert "bash tests/run.sh" in (REPO / ".ci" / "run").read_text()


def test_the_suite_builds_the_manual_strictly() -> None:
    assert re.search(r"mkdocs\S* build --strict", (REPO / "tests" / "run.sh").read_text())
    assert (REPO / "mkdocs.yml").is_file()
    assert "docs_dir: docs" in (REPO / "mkdocs.yml").read_text()


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_links_of_the_top_level_documents_reach_a_file_and_its_heading(name: str) -> None:
    document = REPO / name
    broken = []
    for target in links(document):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        page = (document.parent / path).resolve() if path else document
        if not page.exists():
            broken.append(f"{target}: no such file")
        elif anchor and page.suffix == ".md" and anchor not in anchors(page):
            broken.append(f"{target}: no heading '#{anchor}' in {page.name}")
    assert broken == [], f"{name}: {broken}"


def test_the_anchor_check_finds_a_heading_and_misses_a_wrong_one(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Plain sbatch: the `job_submit` plugin\n\n```\n# not a heading\n```\n"
    )
    assert anchors(page) == {"title", "plain-sbatch-the-job_submit-plugin"}
    (tmp_path / "doc.md").write_text("[a](page.md#title) `[b](x.md)` ![c](i.png) [d](page.md#nope)")
    assert links(tmp_path / "doc.md") == ["page.md#title", "page.md#nope"]


def test_the_manual_holds_pages_only() -> None:
    # raw outputs (fuzz campaigns, benchmark runs) belong to benchmarks/results/
    others = [p.relative_to(REPO) for p in (REPO / "docs").rglob("*") if p.suffix != ".md"]
    assert others == []


def test_the_licence_is_the_one_pyproject_declares() -> None:
    assert 'license = { text = "MIT" }' in (REPO / "pyproject.toml").read_text()
    licence = (REPO / "LICENSE").read_text()
    assert licence.startswith("MIT License")
    assert "the slurm-advisor authors" in licence
