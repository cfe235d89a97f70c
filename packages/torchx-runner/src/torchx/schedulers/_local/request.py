"""The ``local_cwd`` request: run options and every replica ready to be started (pure
data; the launcher and the supervisor start them)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from torchx.schedulers.api import HELP_KEY, StructuredOpts
from torchx.util.startup.lazy_dataclass import asdict, dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LocalOpts", "Opts", "PopenRequest", "ReplicaParam", "format_request"]


@dataclass
class Opts(StructuredOpts):
    """Run options of ``local_cwd``."""

    # Help lives in field metadata (not attribute docstrings) so building the runopts never
    # reads this module's source: it is on the path of every `torchx run`.
    log_dir: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "dir for the replicas' logs"
            " (default: the app's dir under $TORCHX_HOME/local_cwd)"
        },
    )
    prepend_cwd: bool = field(
        default=False,
        metadata={HELP_KEY: "put the working dir before (True) or after (False) the PATH entries"},
    )
    auto_set_cuda_visible_devices: bool = field(
        default=False,
        metadata={
            HELP_KEY: "give each GPU replica its own share of this host's GPUs"
            " in CUDA_VISIBLE_DEVICES"
        },
    )


class LocalOpts(Opts):
    """Compat name of :class:`Opts`. The options were a TypedDict called ``LocalOpts``:
    ``LocalOpts({"log_dir": d})`` (one mapping) is that dict, as upstream's tests and
    callers build it; keyword arguments give the options' dataclass."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], Mapping):
            return dict(args[0])  # not an instance: __init__ is not called
        return super().__new__(cls)


@dataclass
class ReplicaParam:
    """How one replica is started: argv, extra environment, log files and working dir."""

    args: list[str]
    env: dict[str, str]
    stdout: str | None = None
    stderr: str | None = None
    combined: str | None = None
    cwd: str | None = None


@dataclass
class PopenRequest:
    """The ``local_cwd`` request: every replica of every role, ready to be started.

    ``role_params[role][i]`` and ``role_log_dirs[role][i]`` belong to replica ``i`` (the
    node index, not a rank).
    """

    app_id: str
    log_dir: str
    role_params: dict[str, list[ReplicaParam]]
    role_log_dirs: dict[str, list[str]]


def format_request(request: PopenRequest) -> str:
    """The request as indented JSON (``pprint`` would import ``dataclasses`` and ``inspect``)."""

    return json.dumps(asdict(request), indent=2, default=str)
