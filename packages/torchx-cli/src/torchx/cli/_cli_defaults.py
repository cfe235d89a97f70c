"""What the argparse actions and the plain-form parse of a command share, argparse-free.

* :func:`cli_config`: the ``[cli:<subcmd>]`` section of ``.torchxconfig``, the defaults of
  the options that take theirs from it.
* :data:`ONCE_SEEN_ATTR`: the namespace attribute naming the once-only options a command
  line gave (:func:`explicitly_given`).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

__all__ = ["ONCE_SEEN_ATTR", "cli_config", "explicitly_given"]

# Kept on the namespace (not on an action class) so that parsing twice in one process works.
ONCE_SEEN_ATTR = "_torchx_once_seen"

# ``[cli:<subcmd>]`` sections, read once per process and subcommand.
_config_cache: "dict[str, dict[str, str]]" = {}


def cli_config(subcmd: str) -> "dict[str, str]":
    """``{dest: value}`` of the ``[cli:<subcmd>]`` section of ``.torchxconfig``."""
    if subcmd not in _config_cache:
        from torchx.runner.config import get_configs

        _config_cache[subcmd] = dict(get_configs(prefix="cli", name=subcmd))
    return _config_cache[subcmd]


def explicitly_given(namespace: "Namespace") -> "set[str]":
    """The ``dest`` of every once-only option that was given on the command line."""
    seen: set[str] = getattr(namespace, ONCE_SEEN_ATTR, None) or set()
    return set(seen)
