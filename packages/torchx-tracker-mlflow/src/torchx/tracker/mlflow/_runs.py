"""Finding the MLflow run of a TorchX run id, and creating it exactly once.

TorchX names the MLflow run after its run id (the job's app handle), so every replica of a
job, and any later process, finds the same run by name. Replicas start together and may
all find no run: the one that creates the lock experiment ``.torchx-run-locks/<experiment
id>/<hash of the name>`` creates the run, the others wait for it to appear. MLflow refuses a
second experiment of the same name in any store, so exactly one wins, without torch or any
rank information. The lock is deleted (kept in the "deleted" state, which still reserves
its name, until ``mlflow gc``) right after the run exists. Where locks cannot be created
(a store that restricts experiment names), each replica creates a run and all converge on
the oldest one, deleting their own when it is not.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator

from torchx.tracker.mlflow import _sdk as sdk
from torchx.util.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

__all__ = ["find_runs", "get_or_create_run", "iter_runs", "quote"]

logger = get_logger(__name__)

_LOCK_PREFIX = ".torchx-run-locks"
_PAGE = 1000


def quote(value: str) -> str:
    """``value`` as a string literal of MLflow's search filter syntax."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ValueError(f"run id {value!r} holds both quote characters; MLflow cannot search for it")


def iter_runs(client: MlflowClient, experiment_id: str, filter_string: str = "") -> Iterator[Run]:
    """Every active run of the experiment matching ``filter_string``, oldest first."""
    token: str | None = None
    while True:
        page = client.search_runs(
            [experiment_id],
            filter_string=filter_string,
            max_results=_PAGE,
            order_by=["attributes.start_time ASC"],
            page_token=token,
        )
        yield from page
        token = page.token
        if not token:
            return


def find_runs(client: MlflowClient, experiment_id: str, run_name: str) -> list[Run]:
    """The active runs named ``run_name``, the one TorchX uses first."""
    runs = list(iter_runs(client, experiment_id, f"tags.`mlflow.runName` = {quote(run_name)}"))
    return sorted(runs, key=lambda r: (r.info.start_time or 0, r.info.run_id))


def _lock_name(experiment_id: str, run_name: str) -> str:
    digest = hashlib.sha256(run_name.encode("utf-8")).hexdigest()[:40]
    return f"{_LOCK_PREFIX}/{experiment_id}/{digest}"


def _take_lock(client: MlflowClient, experiment_id: str, run_name: str) -> str | bool:
    """The id of the lock experiment when this process created it, ``False`` when another
    process did, ``True`` when the store cannot hold locks (fall back to converging)."""
    mlflow_error = sdk.mlflow_error()

    try:
        return str(client.create_experiment(_lock_name(experiment_id, run_name)))
    except mlflow_error as e:
        if e.error_code == "RESOURCE_ALREADY_EXISTS":
            return False
        logger.debug("no run-creation lock in this MLflow store: %s", e.message)
        return True


def _drop_lock(client: MlflowClient, lock_id: str) -> None:
    mlflow_error = sdk.mlflow_error()

    try:
        client.delete_experiment(lock_id)
    except mlflow_error as e:
        logger.debug("could not delete run-creation lock experiment %s: %s", lock_id, e.message)


def _create_converging(
    client: MlflowClient, experiment_id: str, run_name: str, tags: dict[str, str]
) -> str:
    """Creates a run, then settles on the oldest run of that name (deleting ours if not it)."""
    mine = str(client.create_run(experiment_id, run_name=run_name, tags=tags).info.run_id)
    runs = find_runs(client, experiment_id, run_name)
    chosen = str(runs[0].info.run_id) if runs else mine
    if chosen != mine:
        client.delete_run(mine)
    return chosen


def get_or_create_run(
    client: MlflowClient,
    experiment_id: str,
    run_name: str,
    tags: dict[str, str],
    wait_s: float,
) -> str:
    """The MLflow run id of ``run_name``, creating the run (once, see module doc) if needed."""
    runs = find_runs(client, experiment_id, run_name)
    if runs:
        return str(runs[0].info.run_id)
    lock = _take_lock(client, experiment_id, run_name)
    if isinstance(lock, str):
        try:
            runs = find_runs(client, experiment_id, run_name)
            if runs:
                return str(runs[0].info.run_id)
            run = client.create_run(experiment_id, run_name=run_name, tags=tags)
            return str(run.info.run_id)
        finally:
            _drop_lock(client, lock)
    if lock is False:
        deadline = time.monotonic() + wait_s
        delay = 0.02
        while time.monotonic() < deadline:
            runs = find_runs(client, experiment_id, run_name)
            if runs:
                return str(runs[0].info.run_id)
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        logger.warning(
            "MLflow run %r did not appear within %.0f s although another process took its"
            " creation lock (it may have died, or the run was deleted); creating it here",
            run_name,
            wait_s,
        )
    return _create_converging(client, experiment_id, run_name, tags)
