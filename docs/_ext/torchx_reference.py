"""Reference pages generated from the installed code at every docs build.

The run-options tables come from each scheduler's ``run_opts()``, the component reference
from the component functions (their signatures and docstrings, as ``torchx run COMPONENT
--help`` reads them) and the CLI reference from the real argument parsers, plugin
subcommands included. Pages pull them in with MyST's ``{include}`` from ``_generated/``,
so a page can never show options its scheduler does not have.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

GENERATED = "_generated"


def cell(text: object) -> str:
    """One Markdown table cell: pipes escaped, line breaks folded into spaces."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: object) -> str:
    """Inline code in a table cell, with the fence widened when the text holds backticks."""
    value = cell(text)
    if not value:
        return ""
    fence = "``" if "`" in value else "`"
    return f"{fence}{value}{fence}" if fence == "`" else f"{fence} {value} {fence}"


def scheduler_names() -> list[str]:
    from torchx.schedulers import get_scheduler_factories

    return sorted(get_scheduler_factories())


def runopts_rows(scheduler: str) -> list[tuple[str, str, str, str]]:
    """``(option, type, default, help)`` of every run option of ``scheduler``."""
    from torchx.runner import get_runner
    from torchx.specs import get_type_name

    with get_runner() as runner:
        opts = runner.scheduler_run_opts(scheduler)
    rows = []
    for name, opt in opts:
        default = "(required)" if opt.is_required else ("" if opt.default is None else opt.default)
        rows.append((name, get_type_name(opt.opt_type), str(default), opt.help))
    return rows


def runopts_markdown(scheduler: str) -> str:
    lines = [
        f"Generated from `{scheduler}`'s `run_opts()`; set them with"
        f" `torchx run -s {scheduler} -cfg KEY=VALUE,...`, in the `[{scheduler}]` section of"
        " `.torchxconfig`, or as the `cfg` mapping of the Python API"
        f" (`torchx runopts {scheduler}` prints the same).",
        "",
        "| option | type | default | what it does |",
        "|---|---|---|---|",
    ]
    for name, type_name, default, help_text in runopts_rows(scheduler):
        lines.append(f"| {code(name)} | {code(type_name)} | {code(default)} | {cell(help_text)} |")
    return "\n".join(lines) + "\n"


def _type_of(annotation: Any) -> str:
    if annotation is None or annotation is type(None):
        return ""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def components_markdown() -> str:
    """One section per registered component: what it does and its arguments."""
    from torchx.specs.component_params import resolved_annotations as _annotations
    from torchx.specs.component_parser import create_args_parser as _create_args_parser
    from torchx.specs.file_linter import get_fn_docstring
    from torchx.specs.finder import get_components

    out = []
    for name, component in sorted(get_components().items()):
        fn = component.fn
        description, arg_help = get_fn_docstring(fn)
        annotations = _annotations(fn)
        parser = _create_args_parser(fn)
        out += [f"### `{name}`", "", description.strip(), ""]
        out += [f"`torchx run {name} --help` shows the same. Arguments:", ""]
        out += ["| argument | type | default | what it is |", "|---|---|---|---|"]
        for action in parser._actions:
            if action.dest in ("help", argparse.SUPPRESS):
                continue
            flags = ", ".join(action.option_strings) or f"{action.dest} ..."
            if action.nargs == argparse.REMAINDER:
                default = "[]"
            elif action.required:
                default = "(required)"
            else:
                default = "None" if action.default is None else str(action.default)
            out.append(
                f"| {code(flags)} | {code(_type_of(annotations.get(action.dest)))}"
                f" | {code(default)} | {cell(arg_help.get(action.dest, ''))} |"
            )
        out.append("")
    return "\n".join(out)


def _usage(parser: argparse.ArgumentParser) -> str:
    return " ".join(parser.format_usage().split())


def cli_markdown() -> str:
    """The ``torchx`` command: its root options, then one section per subcommand."""
    from torchx.cli.main import BUILTIN_SUBCOMMANDS, create_parser, get_sub_cmds

    subcmds = get_sub_cmds()
    root = create_parser(subcmds)
    sub_action = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    out = ["```text", _usage(root).replace("usage: ", ""), "```", ""]
    out += _options_table(root)
    for name in sorted(sub_action.choices):
        parser = sub_action.choices[name]
        origin = "built in" if name in BUILTIN_SUBCOMMANDS else "a plugin subcommand"
        out += [f"## `torchx {name}`", "", (parser.description or "").strip(), ""]
        out += [f"({origin})", "", "```text", _usage(parser).replace("usage: ", ""), "```", ""]
        out += _options_table(parser)
    return "\n".join(out)


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        flags = ", ".join(action.option_strings) or (action.metavar or action.dest)
        default = action.default
        if default in (None, argparse.SUPPRESS, False) or action.nargs == 0:
            shown = ""
        else:
            shown = str(default)
        rows.append(f"| {code(flags)} | {code(shown)} | {cell(action.help or '')} |")
    if not rows:
        return []
    return ["| argument | default | what it does |", "|---|---|---|", *rows, ""]


def slurm_reasons_markdown() -> str:
    """The pending reasons ``torchx status`` explains on Slurm, as it explains them."""
    try:
        from torchx.schedulers._slurm.status import _REASONS
    except ImportError:
        return "(install `torchx-sched-slurm` to list them)\n"
    lines = ["| Slurm's reason | what `torchx status` adds |", "|---|---|"]
    lines += [f"| {code(reason)} | {cell(text)} |" for reason, text in sorted(_REASONS.items())]
    return "\n".join(lines) + "\n"


def generate(srcdir: Path) -> list[Path]:
    """Writes every generated page fragment under ``srcdir/_generated`` (only the files
    whose text changed, so incremental builds stay incremental)."""
    pages = {f"runopts-{name}.md": runopts_markdown(name) for name in scheduler_names()}
    pages["components.md"] = components_markdown()
    pages["cli.md"] = cli_markdown()
    pages["slurm-reasons.md"] = slurm_reasons_markdown()
    target = srcdir / GENERATED
    target.mkdir(exist_ok=True)
    written = []
    for file_name, text in pages.items():
        path = target / file_name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


def _on_builder_inited(app: Any) -> None:
    generate(Path(app.srcdir))


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
