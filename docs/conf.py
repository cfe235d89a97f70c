"""Sphinx configuration of the TorchX documentation site (`hatch run docs:build`).

Offline by design: no intersphinx, no remote images, a theme installed from the index.
Reference pages (run options, components, the CLI) are generated from the installed code
by ``_ext/torchx_reference.py`` at every build.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

from torchx.version import __version__

project = "TorchX"
author = "TorchX contributors"
copyright = "TorchX contributors"
version = release = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_copybutton",
    "torchx_reference",
]
# The copy button takes the commands of a console block without their `$ ` and `> `
# prompts, and leaves its output out: what it copies pastes into a shell as it is
# (docs/test_paste.py checks every block that way).
copybutton_prompt_text = r"\$ |>(?: |$)"  # no capturing group: the copy keeps group 2
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True
copybutton_selector = "div.highlight-console pre, div.highlight-shell pre, div.highlight-bash pre"
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_generated", "conftest.py", "README.md", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings: list[str] = []

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = f"TorchX {release}"
html_theme_options = {"navigation_with_keys": True}
html_static_path = ["_static"]
html_css_files = ["torchx.css"]
html_show_sourcelink = False
html_copy_source = False
smartquotes = False
