"""The launcher's side of tracking: a word when a configured tracker is not installed, and
the end of each tracked run once the launcher sees its app in a final state.

A job's trackers write while it runs; only the launcher (``run --wait``, ``status``, the
Runner) sees how the app ended, so it tells each configured tracker (trackers that keep run
state implement ``TrackerBase.app_finished``). Each app is finished once: a marker under
``TORCHX_HOME`` remembers it across processes.
"""

from __future__ import annotations

import os

from torchx.util.log import get_logger

__all__ = ["finish_tracked_app", "warn_missing_trackers"]

logger = get_logger(__name__)

DISTRIBUTIONS = {"mlflow": "torchx-tracker-mlflow", "fsspec": "torchx-runner"}
"""Which distribution provides each tracker TorchX ships (for the "install it" hint)."""

_warned: set[str] = set()
_finished: set[str] = set()


def warn_missing_trackers(names: list[str]) -> None:
    """Warns once per process about each configured tracker that nothing provides."""
    from torchx.tracker.api import TRACKER_ENTRYPOINT_GROUP
    from torchx.util.entrypoints import load_group

    missing = [n for n in names if n not in _warned]
    if not missing:
        return
    installed = load_group(TRACKER_ENTRYPOINT_GROUP)
    for name in missing:
        _warned.add(name)
        if name in installed or ":" in name:  # an entry point, or a module:factory path
            continue
        hint = DISTRIBUTIONS.get(name)
        install = f"pip install {hint}" if hint else "install the package that provides it"
        if not hint:
            import difflib

            close = difflib.get_close_matches(name, [*installed, *DISTRIBUTIONS], n=1)
            install += f" (or did you mean `{close[0]}`?)" if close else ""
        logger.warning(
            "tracker `%s` is configured (TORCHX_TRACKERS or [torchx:tracker] in .torchxconfig)"
            " but not installed, so this job is not tracked by it: %s",
            name,
            install,
        )


def _marker(handle: str) -> str:
    import base64

    from torchx.util.home import torchx_home

    name = base64.b32encode(handle.encode("utf-8")).decode("ascii")
    return os.path.join(torchx_home(), "trackers", "finished", name[:200])


def finish_tracked_app(handle: str, state: str) -> None:
    """Tells every configured tracker that ``handle`` ended in ``state`` (once per app)."""
    if handle in _finished:
        return
    _finished.add(handle)
    if not os.environ.get("TORCHX_TRACKERS"):
        from torchx.runner.config import find_configs

        if not find_configs():  # no tracker can be configured: nothing to read
            return
    from torchx.runner.api import get_configured_trackers

    configured = get_configured_trackers()
    if not configured:
        return
    marker = _marker(handle)
    if os.path.exists(marker):
        return
    from torchx.tracker.api import TRACKER_ENTRYPOINT_GROUP, build_trackers
    from torchx.util.entrypoints import load_group

    installed = load_group(TRACKER_ENTRYPOINT_GROUP)  # the rest was warned about at submit
    usable = {k: v for k, v in configured.items() if k in installed or ":" in k}
    for tracker in build_trackers(usable):
        try:
            tracker.app_finished(handle, state)
        except Exception as e:  # a tracker's outage must not fail `status`
            logger.warning("tracker %s could not record that %s ended: %s", tracker, handle, e)
            return
    from torchx.util.atomic import try_write_private

    try_write_private(marker, state.encode())
