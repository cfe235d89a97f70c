"""``torchx builtins``: list the components ``torchx run`` can launch by name."""

import argparse

from torchx.cli.cmd_base import SubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.finder import _Component

__all__ = ["CmdBuiltins"]


class CmdBuiltins(SubCommand):
    """``torchx builtins [--print NAME]``: the registered components, or one's source."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "--print",
            type=str,
            metavar="NAME",
            help="print the source of component NAME (e.g. dist.ddp)",
        )

    def _builtins(self) -> "dict[str, _Component]":
        from torchx.specs.finder import get_components

        return get_components()

    def run(self, args: argparse.Namespace) -> None:
        if args.print:
            from torchx.specs.finder import get_builtin_source

            print(get_builtin_source(args.print))
            return
        components = self._builtins()
        lines = [f"Found {len(components)} builtin components:"]
        lines += [f" {i:2d}. {c.name}" for i, c in enumerate(components.values(), start=1)]
        print("\n".join(lines))
