"""The launcher's side of tracking: a word when a configured tracker is not installed, and
the end of each tracked run once the launcher sees its app in a final state.

A job's trackers write while it runs; only the launcher (``run --wait``, ``status``, the
Runner) sees how the app ended, so it tells each configured tracker (trackers that keep run
state implement ``TrackerBase.app_finished``). That is done by a detached helper process
(``python -m torchx.runner._trackers HANDLE STATE``), so that ``torchx status`` and
``run --wait`` neither wait for a tracking server nor import its SDK; the helper's
warnings go to ``$TORCHX_HOME/trackers/finish.log``. Each app is finished once: a marker
under ``TORCHX_HOME`` remembers it across processes.
"""

from __future__ import annotations

import os
import sys

from torchx.runner import config
from torchx.runner.config import find_configs
from torchx.settings import ENV_TORCHX_TRACKERS
from torchx.tracker.api import build_trackers, installed_trackers, tracker_config_env_var_name
from torchx.util.log import get_logger
from torchx.util.support.atomic import make_private_dirs, try_write_private
from torchx.util.support.home import torchx_home
from torchx.util.support.retry import outage_budget

__all__ = ["finish_tracked_app", "get_configured_trackers", "warn_missing_trackers"]

logger = get_logger(__name__)

DISTRIBUTIONS = {"mlflow": "torchx-tracker-mlflow", "fsspec": "torchx-runner"}
"""Which distribution provides each tracker TorchX ships (for the "install it" hint)."""

_warned: set[str] = set()
_finished: set[str] = set()


def get_configured_trackers() -> dict[str, str | None]:
    """Tracker names and their configs, as the launched job should see them.

    Names are the keys of ``[torchx:tracker]`` in ``.torchxconfig``, replaced entirely by
    ``$TORCHX_TRACKERS`` (comma list) when set. Each config is ``[tracker:<name>] config``,
    overridden by ``$TORCHX_TRACKER_<NAME>_CONFIG``.
    """

    env_names = os.environ.get(ENV_TORCHX_TRACKERS)
    if env_names is not None:
        names = [n.strip() for n in env_names.split(",") if n.strip()]
        if not names:
            return {}
    else:
        names = list(config.get_configs(prefix="torchx", name="tracker"))
    if not names:
        return {}
    sections = config.load_sections(prefix="tracker")
    trackers: dict[str, str | None] = {}
    for name in names:
        value = os.environ.get(tracker_config_env_var_name(name))
        if value is None:
            value = sections.get(name, {}).get("config")
        trackers[name] = value
    logger.debug("configured trackers: %s", trackers)
    return trackers


def warn_missing_trackers(names: list[str]) -> None:
    """Warns once per process about each configured tracker that nothing provides."""

    missing = [n for n in names if n not in _warned]
    if not missing:
        return
    installed = installed_trackers()
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

    name = base64.b32encode(handle.encode("utf-8")).decode("ascii")
    return os.path.join(torchx_home(), "trackers", "finished", name[:200])


def finish_tracked_app(handle: str, state: str) -> None:
    """Has every configured tracker told that ``handle`` ended in ``state`` (once per app,
    by a detached helper process)."""
    if handle in _finished:
        return
    _finished.add(handle)
    if not os.environ.get("TORCHX_TRACKERS") and not find_configs():
        return  # no tracker can be configured: nothing to read
    marker = _marker(handle)
    if not get_configured_trackers() or os.path.exists(marker):
        return
    import subprocess

    log = os.path.join(os.path.dirname(os.path.dirname(marker)), "finish.log")
    make_private_dirs(os.path.dirname(log))
    with open(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as out:
        subprocess.Popen(
            [sys.executable, "-m", "torchx.runner._trackers", handle, state],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # outlives the command; Ctrl-C does not reach it
            cwd=os.getcwd(),
        )


def _finish_now(handle: str, state: str) -> int:
    """The helper's work: tells the installed configured trackers, then leaves the marker."""

    marker = _marker(handle)
    if os.path.exists(marker):
        return 0
    configured = get_configured_trackers()
    installed = installed_trackers()  # the rest was warned about at submit
    usable = {k: v for k, v in configured.items() if k in installed or ":" in k}

    for tracker in build_trackers(usable):
        try:
            # detached from the user's command: it can wait out a tracking server's outage
            with outage_budget():
                tracker.app_finished(handle, state)
        except Exception as e:  # report, and retry on a later status: no marker
            logger.warning("tracker %s could not record that %s ended: %s", tracker, handle, e)
            return 1
    try_write_private(marker, state.encode())
    return 0


if __name__ == "__main__":
    import logging
    import sys

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    sys.exit(_finish_now(sys.argv[1], sys.argv[2]))
