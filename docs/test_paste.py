"""Every shell block of the site (and the README) pastes into bash as it is.

A reader copies a block with the copy button (sphinx-copybutton, configured in conf.py),
which keeps only the command lines of a ``console`` transcript, without their ``$ `` and
``> `` prompts, and copies a ``shell``/``bash`` block whole. What it copies must parse in
bash to the end: no prompt read as a redirection, no here-document left open (bash would
sit at its ``>`` prompt and write no file), no quote left unclosed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
SHELL_LANGUAGES = ("console", "shell", "bash", "sh")
_FENCE = re.compile(r"^(`{3,})\s*\{?(\w+)\}?[^\n]*\n(.*?)^\1\s*$", re.MULTILINE | re.DOTALL)
# conf.py's copybutton_prompt_text, as the copy button applies it to each line
_PROMPT = re.compile(r"^(\$ |>( |$))")


def copied(language: str, text: str) -> str:
    """What the copy button puts on the clipboard for a block (its only-prompt-lines
    mode: the command lines without their prompts; a block without any prompt whole)."""
    lines = text.splitlines()
    if not any(_PROMPT.match(line) for line in lines):
        return text
    kept = []
    for line in lines:
        prompt = _PROMPT.match(line)
        if prompt:
            kept.append(line[prompt.end() :])
        elif not line.strip():  # its copyEmptyLines: blank output lines come along
            kept.append(line)
    return "\n".join(kept) + "\n"


def _blocks() -> list[tuple[str, int, str, str]]:
    found = []
    for page in sorted([ROOT / "README.md", *DOCS.rglob("*.md")]):
        if "_build" in page.parts or "_generated" in page.parts:
            continue
        text = page.read_text()
        for match in _FENCE.finditer(text):
            if match.group(2) in SHELL_LANGUAGES:
                line = text.count("\n", 0, match.start()) + 1
                found.append((str(page.relative_to(ROOT)), line, match.group(2), match.group(3)))
    return found


BLOCKS = _blocks()


def test_the_site_has_shell_blocks_to_paste() -> None:
    assert len(BLOCKS) > 40 and any(lang == "console" for _, _, lang, _ in BLOCKS)


@pytest.mark.parametrize(
    ("page", "line", "language", "text"), BLOCKS, ids=[f"{p}:{n}" for p, n, _, _ in BLOCKS]
)
def test_a_shell_block_pastes_into_bash(page: str, line: int, language: str, text: str) -> None:
    if language != "console":
        # shown as it is typed: a prompt here would be pasted along with the command
        prompted = [row for row in text.splitlines() if row.startswith(("$ ", "> "))]
        assert not prompted, f"{page}:{line}: a {language} block with prompts: {prompted[0]!r}"
    pasted = copied(language, text)
    check = subprocess.run(
        ["bash", "-n"], input=pasted, capture_output=True, text=True, timeout=30, check=False
    )
    assert check.returncode == 0 and not check.stderr, (
        f"{page}:{line}: bash cannot take the pasted block: {check.stderr.strip()}\n{pasted}"
    )


@pytest.mark.parametrize(
    ("language", "text", "clipboard"),
    [
        ("console", "$ torchx run utils.echo\nhello\n", "torchx run utils.echo\n"),
        (
            "console",
            "$ cat > t.py <<'EOF'\n> print(1)\n>\n> EOF\n",
            "cat > t.py <<'EOF'\nprint(1)\n\nEOF\n",
        ),
        ("bash", "pip install torchx-cli\n", "pip install torchx-cli\n"),
    ],
)  # fmt: skip
def test_the_copy_rule_is_the_copy_buttons(language: str, text: str, clipboard: str) -> None:
    assert copied(language, text) == clipboard


def test_a_prompted_here_document_left_open_is_caught() -> None:
    """What the quickstart's block did when pasted with its prompts by hand."""
    pasted = "$ cat > train.py <<'EOF'\n> print(1)\n> EOF\n"
    check = subprocess.run(
        ["bash", "-n"], input=pasted, capture_output=True, text=True, check=False
    )
    assert check.returncode != 0 or check.stderr
