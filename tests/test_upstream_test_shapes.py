"""What upstream's own tests do with the public API that the project got wrong (the fifth
compatibility round): each case in the shape those tests use it."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from unittest import mock

from torchx.specs import AppDef, AppDryRunInfo, Resource, Role

TORCHX = str(Path(sys.executable).parent / "torchx")


def test_run_args_from_a_namespace_of_upstreams_flags() -> None:
    """A Namespace built with upstream's ``torchx run`` flags has no ``idempotency_key``."""
    from torchx.cli.cmd_run import torchx_run_args_from_argparse

    args = argparse.Namespace(
        scheduler="local_cwd", dryrun=True, wait=False, log=False, workspace="",
        parent_run_id=None, tee_logs=False,
    )  # fmt: skip
    run_args = torchx_run_args_from_argparse(args, "utils.echo", [], {})
    assert run_args.idempotency_key is None and run_args.component_name == "utils.echo"


def test_local_opts_of_the_old_dict_form(tmp_path: Path) -> None:
    from torchx.schedulers.local_scheduler import LocalOpts, create_scheduler

    cfg = LocalOpts({"log_dir": str(tmp_path)})
    assert cfg == {"log_dir": str(tmp_path)}
    app = AppDef("a", [Role("r", image=str(tmp_path), entrypoint="true")])
    request = create_scheduler("t").submit_dryrun(app, cfg).request
    assert request.log_dir.startswith(str(tmp_path)), request.log_dir
    assert LocalOpts(log_dir="x").log_dir == "x"  # the keyword form: the options' dataclass


def test_a_dry_run_whose_formatter_returns_no_text(tmp_path: Path) -> None:
    """Upstream's tests give a workspace scheduler's dry run a formatter returning a mock;
    the runner never formats it there."""
    from torchx.runner import get_runner
    from torchx.schedulers.local_scheduler import LocalScheduler

    real = LocalScheduler.submit_dryrun

    def odd_formatter(self: LocalScheduler, app: AppDef, cfg: object) -> AppDryRunInfo[object]:
        info = real(self, app, cfg)  # type: ignore[arg-type]
        info._fmt = lambda request: mock.MagicMock()  # type: ignore[assignment,method-assign]
        return info

    (tmp_path / "ws").mkdir()
    app = AppDef("a", [Role("r", image="/tmp", entrypoint="true", resource=Resource(1, 0, 64))])
    with mock.patch.object(LocalScheduler, "submit_dryrun", odd_formatter), get_runner() as runner:
        info = runner.dryrun(app, "local_cwd", workspace=str(tmp_path / "ws"))
    assert info.request is not None


def test_a_value_repeated_with_equals_and_bare_dashes_are_no_repeats(tmp_path: Path) -> None:
    def dryrun(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [TORCHX, "run", "--dryrun", "-s", "local_cwd", *args],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    assert dryrun("utils.echo", "--msg=a", "--msg=b").returncode == 0  # the last one wins
    assert dryrun("utils.sh", "cat", "-", "-", "--", "x").returncode == 0
    repeated = dryrun("utils.echo", "--msg", "a", "--msg", "b")
    assert "Repeated Command Line Arguments: ['--msg']" in repeated.stderr


def test_docker_app_ids_come_through_the_schedulers_make_unique() -> None:
    from torchx.schedulers.docker_scheduler import create_scheduler

    app = AppDef("app", [Role("r", image="ubuntu", entrypoint="true")])
    with mock.patch("torchx.schedulers.docker_scheduler.make_unique", return_value="app_name_42"):
        request = create_scheduler("t").submit_dryrun(app, {}).request
    assert request.app_id == "app_name_42"
    assert request.containers[0].kwargs["name"].startswith("app_name_42-r-")


def test_a_docker_dry_run_says_the_attempt_wrapper_may_be_dropped() -> None:
    """The dry run shows the ``/bin/sh -c`` wrapper a restartable replica gets, and says
    that a real run drops it for an image without a shell."""
    from torchx.schedulers.docker_scheduler import create_scheduler

    role = Role("r", image="gcr.io/distroless/python3", entrypoint="python3", max_retries=2)
    shown = str(create_scheduler("t").submit_dryrun(AppDef("app", [role]), {}).request)
    assert '"/bin/sh"' in shown and "a real run drops it when the image has no /bin/sh" in shown
    plain = Role("r", image="ubuntu", entrypoint="true")
    assert "note" not in str(create_scheduler("t").submit_dryrun(AppDef("a", [plain]), {}).request)


def test_describe_native_reads_back_a_local_apps_request(tmp_path: Path) -> None:
    """``Runner.describe_native``: the read-side twin of ``dryrun``, the request a real
    local_cwd app was started from (its command, env, log files), from another runner."""
    from torchx.runner import get_runner
    from torchx.schedulers.local_scheduler import PopenRequest

    role = Role(
        "r", image=str(tmp_path), entrypoint="sh", args=["-c", "echo $GREETING"],
        env={"GREETING": "hi"}, resource=Resource(1, 0, 64),
    )  # fmt: skip
    with get_runner() as runner:
        handle = runner.run(AppDef("native", [role]), "local_cwd")
        runner.wait(handle, wait_interval=0.1)
    with get_runner() as other:
        info = other.describe_native(handle)
        assert other.describe_native(handle.rsplit("/", 1)[0] + "/native-nosuch") is None
    assert info is not None and info._scheduler == "local_cwd"
    request = info.request
    assert isinstance(request, PopenRequest) and request.app_id == handle.rsplit("/", 1)[1]
    (replica,) = request.role_params["r"]
    assert replica.args[-2:] == ["-c", "echo $GREETING"] and replica.env["GREETING"] == "hi"
    assert replica.combined is not None and Path(replica.combined).read_text() == "hi\n"
    assert "echo $GREETING" in repr(info)
