"""The help formatter of component parsers (``torchx run COMPONENT --help``).

Its own module because every component parser needs it, while the linter next to it in
:mod:`torchx.specs.file_linter` (which re-exports it) needs ``ast`` and ``inspect``.
"""

import argparse
import re

from torchx.util.support.terminal import help_width

__all__ = ["TorchXArgumentHelpFormatter"]


class TorchXArgumentHelpFormatter(
    argparse.RawDescriptionHelpFormatter,
    argparse.ArgumentDefaultsHelpFormatter,
    argparse.MetavarTypeHelpFormatter,
):
    """Component ``--help``: appends `` (required)`` or `` (default: X)`` to each help line."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:

        # argparse would import shutil for the width on every add_argument.
        super().__init__(
            prog, indent_increment, max_help_position, help_width() if width is None else width
        )

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default is argparse.SUPPRESS:
            return text
        if action.required and action.nargs != argparse.REMAINDER:
            return f"{text} (required)"
        return f"{text} (default: {action.default})"


def plain_text(text: str) -> str:
    """A docstring's reStructuredText as a terminal shows it: ````code```` and
    ``:role:`target``` become ```code``` and ```target```, directive lines
    (``.. code-block:: bash``) go, and a paragraph's closing ``::`` is one ``:``."""

    text = re.sub(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`", r"`\1`", text)
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(".. ")]
    return "\n".join(re.sub(r"(\S)::$", r"\1:", line) for line in lines)
