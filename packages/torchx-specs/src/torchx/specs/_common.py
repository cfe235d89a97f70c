"""Sentinels, exceptions, app handles and small helpers shared by every spec module.

Kept free of heavy imports: ``import torchx.specs`` must stay within the start-up budget
(see docs/design.md), so ``pathlib`` is imported only inside :func:`TORCHX_HOME`.
"""

from collections import namedtuple
from collections.abc import Iterable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pathlib
    from typing import NamedTuple

ALL = "all"
"""Wildcard scheduler backend name (e.g. ``.torchxconfig`` sections that apply to all)."""

MISSING = "<MISSING>"
"""Value of string attributes that were never set (e.g. ``Role.entrypoint``)."""

NONE = "<NONE>"
"""Value of optional string attributes that are unset (e.g. ``structured_error_msg``)."""

UNKNOWN = "<UNKNOWN>"
"""Value of string attributes whose value cannot be determined."""

AppHandle = str
"""``{scheduler_backend}://{session_name}/{app_id}``, the identifier of a launched app."""

_HANDLE_FORM = "<scheduler>://<session>/<app_id>"
_HANDLE_PATTERN = r"(?P<scheduler_backend>.+)://(?P<session_name>.*)/(?P<app_id>.+)"


class cases:
    """Converts option names between ``snake_case`` and ``camelCase`` spellings."""

    @staticmethod
    def snake_to_camel(name: str) -> str:
        """``"hpc_identity"`` -> ``"hpcIdentity"``; ``"a_b_c"`` -> ``"aBC"``."""
        first, *rest = name.split("_")
        return first + "".join(part.title() for part in rest)

    @staticmethod
    def camel_to_snake(name: str) -> str:
        """``"clusterName"`` -> ``"cluster_name"``."""
        import re

        return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class InvalidRunConfigException(Exception):
    """A run config (``cfg``) value is missing or has the wrong type."""

    def __init__(self, invalid_reason: str, cfg_key: str, cfg: Mapping[str, object] | None) -> None:
        given = dict(cfg) if cfg else "<EMPTY>"
        super().__init__(f"{invalid_reason}. Given: {given}")
        self.cfg_key = cfg_key


class MalformedAppHandleException(Exception):
    """An app handle does not have the ``<scheduler>://<session>/<app_id>`` form."""

    def __init__(self, app_handle: str) -> None:
        super().__init__(
            f"{app_handle!r} is not a valid app handle; expected the form {_HANDLE_FORM}"
            " (for example local_cwd://torchx/echo-bc7f2x)"
        )
        self.app_handle = app_handle


SCHEDULER_DISTRIBUTIONS = {
    "local_cwd": "torchx-runner",
    "local_docker": "torchx-sched-docker",
    "slurm": "torchx-sched-slurm",
    "kubernetes": "torchx-sched-k8s",
    "aws_batch": "torchx-sched-batch",
}
"""Which distribution provides each scheduler this project ships."""


def install_hint(scheduler_backend: str) -> str:
    """`` (pip install DIST)`` for a scheduler this project ships, else ``""``."""
    dist = SCHEDULER_DISTRIBUTIONS.get(scheduler_backend)
    return f" (pip install {dist})" if dist else ""


class UnknownSchedulerException(KeyError):
    """No scheduler is registered under the given name.

    A ``KeyError`` so that code written when the runner raised ``KeyError`` keeps working.
    """

    def __init__(self, scheduler_backend: str, available: Iterable[str] | None = None) -> None:
        message = f"Unknown scheduler {scheduler_backend!r}{install_hint(scheduler_backend)}"
        names = sorted(available) if available is not None else []
        if names:
            message += f"; registered schedulers: {', '.join(names)}"
        else:
            message += "; run `torchx schedulers` to list the registered ones"
        super().__init__(message)
        self.scheduler_backend = scheduler_backend
        self.message = message

    def __str__(self) -> str:
        return self.message


class UnknownAppException(Exception):
    """The scheduler has no record of the app (never submitted, or already deleted)."""

    def __init__(self, app_handle: str) -> None:
        super().__init__(
            f"Unknown app {app_handle!r}: the scheduler has no record of it. Check the handle"
            f" (form {_HANDLE_FORM}); the app may have been deleted or never submitted"
        )
        self.app_handle = app_handle


if TYPE_CHECKING:

    class ParsedAppHandle(NamedTuple):
        """The three parts of an :data:`AppHandle`."""

        scheduler_backend: str
        session_name: str
        app_id: str

else:  # the same class without importing typing (see torchx.specs.api)
    ParsedAppHandle = namedtuple("ParsedAppHandle", ["scheduler_backend", "session_name", "app_id"])
    ParsedAppHandle.__doc__ = "The three parts of an :data:`AppHandle`."


def make_app_handle(scheduler_backend: str, session_name: str, app_id: str) -> AppHandle:
    """Builds ``{scheduler_backend}://{session_name}/{app_id}``."""
    return f"{scheduler_backend}://{session_name}/{app_id}"


def parse_app_handle(app_handle: AppHandle) -> ParsedAppHandle:
    """Splits an app handle into its parts.

    The session may be empty (``k8s:///foo``); everything after the last ``/`` is the app id.
    Raises :class:`MalformedAppHandleException` when the handle has another form.
    """
    import re

    match = re.match(_HANDLE_PATTERN, app_handle)
    if not match:
        raise MalformedAppHandleException(app_handle)
    return ParsedAppHandle(**match.groupdict())


def TORCHX_HOME(*subdir_paths: str) -> "pathlib.Path":
    """Returns ``$TORCHX_HOME/<subdir_paths...>`` (default base ``~/.torchx``), creating it.

    Directories created here are private (mode 0700) because they hold app state and logs.
    """
    import pathlib

    from torchx.util.support.atomic import make_private_dirs
    from torchx.util.support.home import torchx_home

    path = pathlib.Path(torchx_home())
    path = path.joinpath(*subdir_paths)
    make_private_dirs(str(path))
    return path
