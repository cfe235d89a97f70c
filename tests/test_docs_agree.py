"""docs/design.md and the distributions' pyproject files name the same dependencies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _documented(dist: str) -> set[str]:
    table = (ROOT / "docs" / "design.md").read_text()
    row = re.search(rf"^\| `{re.escape(dist)}` \(\+ ([^)]*)\) \|", table, re.MULTILINE)
    assert row, f"no `{dist}` (+ deps) row in docs/design.md"
    return {d.strip() for d in row.group(1).split(",")}


def _declared(dist: str) -> set[str]:
    pyproject = (ROOT / "packages" / dist / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.MULTILINE | re.DOTALL)
    assert block, f"no dependencies in packages/{dist}/pyproject.toml"
    deps = re.findall(r'"([^"]+)"', block.group(1))
    names = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0] for d in deps}
    return {n for n in names if not n.startswith("torchx")}


@pytest.mark.parametrize("dist", ["torchx-runner", "torchx-tracker-mlflow"])
def test_design_lists_the_declared_dependencies(dist: str) -> None:
    assert _documented(dist) == _declared(dist)


def _config_examples() -> list[tuple[str, str]]:
    """Every fenced block of the READMEs and docs that is a .torchxconfig (starts with a
    [section] line), as (where, text)."""
    found = []
    for doc in [ROOT / "README.md", *ROOT.glob("packages/*/README.md"), *ROOT.glob("docs/*.md")]:
        for i, block in enumerate(
            re.findall(r"^```[a-z]*\n(.*?)^```", doc.read_text(), re.M | re.S)
        ):
            first = next((line for line in block.splitlines() if line.strip()), "")
            if re.fullmatch(r"\[[\w:.-]+\]", first.strip()):
                found.append((f"{doc.relative_to(ROOT)} block {i}", block))
    return found


@pytest.mark.parametrize(("where", "text"), _config_examples())
def test_documented_torchxconfig_examples_parse(where: str, text: str, tmp_path: Path) -> None:
    """Inline `# comments` in documented examples are comments, not part of the values, and
    each scheduler section holds valid run options."""
    import io

    from torchx.runner import config
    from torchx.schedulers import get_scheduler_factories
    from torchx.util.support.config_files import parse_config

    sections = parse_config(io.StringIO(text), where)
    for section, values in sections.items():
        for key, value in values.items():
            assert " #" not in value and "\t#" not in value, (where, section, key, value)
        if section in get_scheduler_factories():
            cfg: dict[str, object] = {}
            config.load(section, io.StringIO(text), cfg)  # type: ignore[arg-type]


def test_there_are_documented_config_examples() -> None:
    assert any("tracker:mlflow" in text for _, text in _config_examples())


def test_building_the_docs_installs_no_torch() -> None:
    """`hatch run docs:build` must not pull 4.7 GB of torch to render HTML; only the env
    that runs the DDP examples (docs-test) has it."""
    import tomllib

    envs = tomllib.loads((ROOT / "hatch.toml").read_text())["envs"]
    assert not any(dep.startswith("torch") for dep in envs["docs"]["dependencies"])
    assert envs["docs-test"]["template"] == "docs"
    assert any(dep.startswith("torch==") for dep in envs["docs-test"]["extra-dependencies"])
    assert "docs-test:test" in (ROOT / "tools" / "test-all.sh").read_text()


USER_PAGES = sorted(
    page
    for page in [*ROOT.glob("docs/*.md"), *ROOT.glob("docs/schedulers/*.md"),
                 *ROOT.glob("docs/examples/*.md")]
    if page.name not in ("design.md", "releasing.md")  # written for contributors
)  # fmt: skip


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_pages_talk_about_the_users_cluster(page: Path) -> None:
    """The project's CI and test machine belong on the contributing pages."""
    text = page.read_text()
    for internal in ("tools/", "the test cluster", "the test image", "## How it is tested",
                     "this repository's CI", "this repository's tests"):  # fmt: skip
        assert internal not in text, f"{page.name} mentions {internal!r}"
