"""``torchx builtins``: list the components ``torchx run`` can launch by name."""

import sys

from torchx.cli._option_table import Option, add_options
from torchx.cli.cmd_base import SubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from torchx.specs.finder import _Component

__all__ = ["CmdBuiltins"]


class CmdBuiltins(SubCommand):
    """``torchx builtins [--print NAME]``: the registered components, or one's source.

    The listing is served from :py:mod:`torchx.cli._component_cache` while the component
    sources are unchanged; a component module that fails to import is reported on stderr.
    """

    OPTIONS = (  # `torchx builtins` alone needs no argparse
        Option(
            ("--print",),
            "print",
            "print the source of component NAME (e.g. dist.ddp)",
            once=False,
            metavar="NAME",
        ),
        Option(
            ("--purposes",),
            "purposes",
            "show each component's purpose beside its name (the default on a terminal)",
            flag=True,
        ),
    )

    def add_arguments(self, subparser: "argparse.ArgumentParser") -> None:
        add_options(subparser, "builtins", self.OPTIONS)

    def _builtins(self) -> "dict[str, _Component]":
        from torchx.specs.finder import get_components

        return get_components()

    def _component_names(self) -> "list[tuple[str, str]]":
        """``(name, purpose)`` of every component: the first line of its docstring."""
        from torchx.cli._component_cache import load_component_names, store_component_names

        names = load_component_names()
        if names is not None:
            return names
        from torchx.specs.help_format import plain_text

        # the docstring's first line, read as it is (no docstring parser: start-up)
        names = [
            (component.name, plain_text((component.fn.__doc__ or "").strip().split("\n")[0]))
            for component in self._builtins().values()
        ]
        from torchx.specs.finder import get_component_load_errors

        errors = get_component_load_errors()
        for error in errors:
            print(
                f"torchx: warning: components of {error} are missing (see `torchx plugins`)",
                file=sys.stderr,
            )
        if not errors:
            store_component_names(names)
        return names

    def run(self, args: "argparse.Namespace") -> None:
        if args.print:
            from torchx.specs.finder import get_builtin_source

            print(get_builtin_source(args.print))
            return
        listing = self._component_names()
        lines = [f"Found {len(listing)} builtin components:"]
        if args.purposes or sys.stdout.isatty():
            width = max((len(name) for name, _ in listing), default=0)
            lines += [
                f"{i:3d}. {name.ljust(width)}  {purpose}".rstrip()
                for i, (name, purpose) in enumerate(listing, start=1)
            ]
        else:  # upstream's lines, which scripts parse: `  1. dist.ddp`
            lines += [f"{i:3d}. {name}" for i, (name, _) in enumerate(listing, start=1)]
        print("\n".join(lines))
