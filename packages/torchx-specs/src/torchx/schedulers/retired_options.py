"""Run options an upstream TorchX release once had and that are gone without a successor.

A ``-cfg`` written for such a release (a README, a launch script) must keep working: the
option is dropped with one warning that names it and says why, instead of the "unknown
run option" error a typo gets. Options that were renamed or have a successor are accepted
by their scheduler itself (Ray's ``working_dir`` becomes the workspace).
"""

from __future__ import annotations

__all__ = ["RETIRED", "retired_option"]

RETIRED: dict[str, dict[str, str]] = {
    "local_cwd": {
        "image_type": "it chose among image providers; local_cwd's image is a directory",
    },
    "ray": {
        "copy_scripts": "the workspace (torchx run --workspace) ships the scripts",
        "copy_script_dirs": "the workspace (torchx run --workspace) ships the scripts",
        "verbose": "torchx --log_level DEBUG shows what the scheduler does",
    },
    "slurm": {
        "nomem": "TorchX leaves --mem out by itself where a partition reports no memory",
    },
}
"""``{scheduler: {option: why it is no longer needed}}``, from upstream's history."""


def retired_option(scheduler: str, key: str) -> str | None:
    """Why ``key`` of ``scheduler`` is no longer used, or None when it never was one."""
    return RETIRED.get(scheduler, {}).get(key)
