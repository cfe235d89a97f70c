"""local_cwd scheduler: requests, lifecycle, retries, logs, errors (real processes only)."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport import wait_until

from torchx.schedulers._local import records as st
from torchx.schedulers.api import Stream
from torchx.schedulers.local_scheduler import (
    CWDImageProvider,
    ImageProvider,
    LocalDirectoryImageProvider,
    LocalOpts,
    LocalScheduler,
    LogIterator,
    Opts,
    PopenRequest,
    ReplicaParam,
    SignalException,
    create_scheduler,
    run_local_job,
)
from torchx.specs.api import (
    AppDef,
    AppDryRunInfo,
    AppState,
    Resource,
    RetryPolicy,
    Role,
    macros,
)
from torchx.util.support.host_checks import real_submit


@pytest.fixture
def sched(home: Path) -> LocalScheduler:
    return create_scheduler("test_session")


def sh_role(script: str, name: str = "sh", **kwargs: object) -> Role:
    return Role(name=name, image="ignored", entrypoint="sh", args=["-c", script], **kwargs)  # type: ignore[arg-type]


def run_app(sched: LocalScheduler, app: AppDef, cfg: dict[str, object] | None = None) -> str:
    return sched.submit(app, cfg or {})  # type: ignore[arg-type]


def wait_terminal(sched: LocalScheduler, app_id: str) -> AppState:
    while True:
        desc = sched.describe(app_id)
        assert desc is not None
        if desc.state in (AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED):
            return desc.state
        sched.wait_for_change(app_id, 30)


def state_doc(app_id: str) -> dict[str, Any]:
    doc = st.read_json(os.path.join(st.app_state_dir(app_id), st.STATE_FILE))
    assert isinstance(doc, dict)
    return doc


def replica_records(app_id: str, role_idx: int = 0) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = state_doc(app_id)["roles"][role_idx]
    return records


# ---------------------------------------------------------------------------------------------
# construction and options


def test_create_scheduler_accepts_any_kwargs(home: Path) -> None:
    sched = create_scheduler("s", trackers="a", home="/x", plugins_source="3")
    assert isinstance(sched, LocalScheduler)
    assert sched.backend == "local"
    assert sched.session_name == "s"


def test_cache_size_must_be_positive(home: Path) -> None:
    with pytest.raises(ValueError, match="cache_size"):
        create_scheduler("s", cache_size=0)


def test_run_opts_match_upstream(sched: LocalScheduler) -> None:
    opts = dict(iter(sched.run_opts()))
    assert list(opts) == ["log_dir", "prepend_cwd", "auto_set_cuda_visible_devices"]
    assert opts["prepend_cwd"].default is False
    assert opts["log_dir"].default is None
    assert issubclass(LocalOpts, Opts)  # LocalOpts({...}) is upstream's TypedDict form
    assert Opts.from_cfg({"prependCwd": True}).prepend_cwd is True


def test_signal_exception_compat() -> None:
    import signal

    e = SignalException("stop", signal.SIGTERM)
    assert e.sigval == signal.SIGTERM
    assert str(e) == "stop"


# ---------------------------------------------------------------------------------------------
# dry run


def test_dryrun_request_per_replica(sched: LocalScheduler, home: Path) -> None:
    role = Role(
        name="trainer",
        image="img",
        entrypoint="echo",
        args=["${app_id}", "${replica_id}", "${img_root}", "$${${rank0_env}}"],
        env={"RID": "r${replica_id}", "PLAIN": "x"},
        num_replicas=2,
    )
    app = AppDef("train", roles=[role])
    info = sched.submit_dryrun(app, {})
    req = info.request
    assert isinstance(req, PopenRequest)
    app_id = req.app_id
    assert app_id.startswith("train-")
    cwd = os.getcwd()
    state_dir = str(home / "local_cwd" / app_id)
    assert req.log_dir == state_dir
    assert req.role_log_dirs == {"trainer": [f"{state_dir}/trainer/0", f"{state_dir}/trainer/1"]}
    for i, p in enumerate(req.role_params["trainer"]):
        assert p.args == ["echo", app_id, str(i), cwd, "${TORCHX_RANK0_HOST}"]
        assert p.cwd == cwd
        assert p.env["RID"] == f"r{i}"
        assert p.env["PLAIN"] == "x"
        assert p.env["TORCHX_RANK0_HOST"] == "localhost"
        assert p.env["TORCHELASTIC_ERROR_FILE"] == f"{state_dir}/trainer/{i}/error.json"
        assert p.env["PET_LOG_DIR"] == f"{state_dir}/torchelastic/trainer"
        assert p.stdout == f"{state_dir}/trainer/{i}/stdout.log"
        assert p.stderr == f"{state_dir}/trainer/{i}/stderr.log"
        assert p.combined == f"{state_dir}/trainer/{i}/combined.log"
    # the caller's role is untouched (no PATH, no macros substituted)
    assert role.env == {"RID": "r${replica_id}", "PLAIN": "x"}
    # the printed request is JSON of the request as a dict
    import json
    from dataclasses import asdict

    assert json.loads(repr(info)) == asdict(req)
    # nothing is created by a dry run
    assert not (home / "local_cwd").exists()


def test_dryrun_keeps_user_elastic_env(sched: LocalScheduler) -> None:
    role = Role(
        "r",
        "img",
        entrypoint="echo",
        env={"TORCHELASTIC_ERROR_FILE": "/e.json", "PET_LOG_DIR": "/pet"},
    )
    p = sched.submit_dryrun(AppDef("a", [role]), {}).request.role_params["r"][0]
    assert p.env["TORCHELASTIC_ERROR_FILE"] == "/e.json"
    assert p.env["PET_LOG_DIR"] == "/pet"


def test_dryrun_log_dir_layout(sched: LocalScheduler, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    info = sched.submit_dryrun(
        AppDef("a", [Role("r", "i", entrypoint="echo")]), {"log_dir": str(logs)}
    )
    req = info.request
    assert req.log_dir == f"{logs}/test_session/{req.app_id}"
    assert req.role_params["r"][0].stdout == f"{logs}/test_session/{req.app_id}/r/0/stdout.log"


# the launching interpreter's venv leads the host PATH (see test_jobs_find_the_launchers_venv)
VENV = f"{os.path.dirname(sys.executable)}:" if sys.prefix != sys.base_prefix else ""


def test_path_order_extra_paths_role_host_cwd(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    sched = create_scheduler("s", extra_paths=["/extra1", "/extra2"])
    role = Role("r", "i", entrypoint="sh", env={"PATH": "/role/bin"})
    cwd = os.getcwd()
    p = sched.submit_dryrun(AppDef("a", [role]), {}).request.role_params["r"][0]
    assert p.env["PATH"] == f"/extra1:/extra2:/role/bin:{VENV}/usr/bin:/bin:{cwd}"
    p = sched.submit_dryrun(AppDef("a", [role]), {"prepend_cwd": True}).request.role_params["r"][0]
    assert p.env["PATH"] == f"{cwd}:/extra1:/extra2:/role/bin:{VENV}/usr/bin:/bin"
    assert role.env == {"PATH": "/role/bin"}


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs to run in a venv")
def test_jobs_find_the_launchers_venv(
    sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.venv/bin/torchx` without activation: the job's `python` is the venv's."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code = "import sys; print(sys.prefix)"
    role = Role("py", "i", entrypoint="python", args=["-c", code])
    app_id = run_app(sched, AppDef("venv", [role]))
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "py")) == [f"{sys.prefix}\n"]


def test_negative_resource_values_mean_unset(sched: LocalScheduler) -> None:
    """Public component files pass memMB=-1 (upstream reads negatives as "unset")."""
    role = Role("r", "i", entrypoint="true", resource=Resource(cpu=1, gpu=0, memMB=-1))
    app_id = run_app(sched, AppDef("neg", [role]))
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED


def test_missing_bind_mount_source_warns_in_dry_run_and_refuses_run(
    sched: LocalScheduler, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from torchx.specs.api import BindMount

    mount = BindMount(src_path="/no/such/dir-7c1", dst_path="/data")
    app = AppDef("m", [Role("r", "i", entrypoint="true", mounts=[mount])])
    info = sched.submit_dryrun(app, {})
    assert "'/no/such/dir-7c1' of role 'r' does not exist" in caplog.text
    with pytest.raises(ValueError, match="/no/such/dir-7c1"):
        sched.schedule(info)
    assert not (home / "local_cwd").exists() or not os.listdir(home / "local_cwd")


def test_ddp_without_torchrun_fails_before_launch(
    sched: LocalScheduler,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """dist.ddp where torch is not installed: one clear line, nothing started; a dry run
    (which may be planning for another machine) shows the plan with one warning."""
    from torchx.components.dist import ddp

    monkeypatch.setattr(sys, "base_prefix", sys.prefix)  # as if torchx ran outside a venv
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no torch there
    app = ddp(script="train.py", j="1x2")
    info = sched.submit_dryrun(app, {})
    assert info.request.role_params["train"][0].args[0] == "bash"
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1
    assert warned[0].startswith("torchrun not found: ")
    assert warned[0].endswith("(a real run would be refused)")
    with pytest.raises(ValueError, match=r"^torchrun not found: .*install torch into this env"):
        sched.submit(app, {})
    assert not (home / "local_cwd").exists() or not any((home / "local_cwd").iterdir())


@pytest.mark.parametrize(
    ("command", "checked"),
    [
        ("no-such-program-xyz --flag", True),
        ("echo hi; no-such-program-xyz", False),  # a builtin first: the shell's business
        ("FOO=1 no-such-program-xyz", False),
        ("exec sleep 1", False),
    ],
)
def test_program_a_shell_command_starts_is_checked(
    sched: LocalScheduler, command: str, checked: bool
) -> None:
    app = AppDef("a", [Role("r", "i", entrypoint="sh", args=["-c", command])])
    with real_submit():
        if checked:
            with pytest.raises(ValueError, match=r"no-such-program-xyz not found.*put its dir"):
                sched.submit_dryrun(app, {})
        else:
            sched.submit_dryrun(app, {})


def test_missing_entrypoint_fails_submit_before_any_state(
    sched: LocalScheduler, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = AppDef("a", [Role("r", "i", entrypoint="no-such-program-4f2a")])
    info = sched.submit_dryrun(app, {})  # a dry run only warns
    assert "'no-such-program-4f2a' of role 'r' was not found" in caplog.text
    with pytest.raises(ValueError, match="no-such-program-4f2a"):
        sched.schedule(info)
    with pytest.raises(ValueError, match="no-such-program-4f2a"):
        sched.submit(app, {})
    assert not (home / "local_cwd").exists() or not os.listdir(home / "local_cwd")


def test_missing_entrypoint_in_edited_request_fails_schedule(
    sched: LocalScheduler, home: Path
) -> None:
    info = sched.submit_dryrun(AppDef("a", [Role("r", "i", entrypoint="true")]), {})
    info.request.role_params["r"][0].args[0] = "./not-here.sh"
    with pytest.raises(ValueError, match=r"not-here\.sh"):
        sched.schedule(info)
    assert not (home / "local_cwd").exists() or not os.listdir(home / "local_cwd")


def test_entrypoint_relative_to_cwd(sched: LocalScheduler) -> None:
    script = Path("hello.sh")
    script.write_text("#!/bin/sh\necho from-script\n")
    script.chmod(0o755)
    app_id = run_app(sched, AppDef("a", [Role("r", "i", entrypoint="hello.sh")]))
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "r")) == ["from-script\n"]


def test_unwritable_log_dir_is_reported_and_leaves_nothing(
    sched: LocalScheduler, home: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    bad = str(blocker / "logs")
    app = AppDef("a", [Role("r", "i", entrypoint="true")])
    with pytest.raises(ValueError, match="log_dir") as err:
        sched.submit(app, {"log_dir": bad})
    assert bad in str(err.value)
    assert not (home / "local_cwd").exists() or os.listdir(home / "local_cwd") == []


def test_custom_image_provider_get_replica_param_is_used(home: Path, tmp_path: Path) -> None:
    img = tmp_path / "img"
    img.mkdir()

    class Provider(LocalDirectoryImageProvider):
        def get_replica_param(
            self,
            img_root: str,
            role: Role,
            stdout: str | None = None,
            stderr: str | None = None,
            combined: str | None = None,
        ) -> ReplicaParam:
            param = super().get_replica_param(img_root, role, stdout, stderr, combined)
            param.env["FROM_PROVIDER"] = role.args[-1]
            return param

    sched = create_scheduler("s", image_provider_class=Provider)
    role = Role(
        "r",
        str(img),
        entrypoint="sh",
        args=["-c", "pwd; echo $FROM_PROVIDER", "id-${replica_id}"],
        num_replicas=2,
    )
    info = sched.submit_dryrun(AppDef("a", [role]), {})
    params = info.request.role_params["r"]
    assert [p.env["FROM_PROVIDER"] for p in params] == ["id-0", "id-1"]
    assert params[1].env["TORCHX_RANK0_HOST"] == "localhost"
    app_id = sched.schedule(info)
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "r", 1)) == [f"{img}\n", "id-1\n"]


def test_local_directory_image_provider_rejects_missing_dir(home: Path) -> None:
    sched = create_scheduler("s", image_provider_class=LocalDirectoryImageProvider)
    with real_submit(), pytest.raises(ValueError, match="/no/such/dir"):
        sched.submit_dryrun(AppDef("a", [Role("r", "/no/such/dir", entrypoint="true")]), {})


def test_image_provider_defaults() -> None:
    class Fetcher(ImageProvider):
        def fetch(self, image: str) -> str:
            return "/root-of/" + image

    role = Role("r", "img", entrypoint="bin/run", args=["a"], env={"E": "1"})
    p = Fetcher().get_replica_param(Fetcher().fetch_role(role), role, "o", "e", "c")
    assert p == ReplicaParam(["/root-of/img/bin/run", "a"], {"E": "1"}, "o", "e", "c", None)
    assert CWDImageProvider({}).fetch("anything") == os.getcwd()


# ---------------------------------------------------------------------------------------------
# running


def test_success_env_macros_and_logs(sched: LocalScheduler, home: Path) -> None:
    script = textwrap.dedent(
        """\
        echo "out ${replica_id} $RID app=${app_id}"
        echo "err ${replica_id}" >&2
        echo "rank0=$TORCHX_RANK0_HOST unbuf=$PYTHONUNBUFFERED user=$USER_VAR"
        echo "errfile=$TORCHELASTIC_ERROR_FILE"
        echo "pet=$PET_LOG_DIR"
        """
    )
    role = sh_role(script, env={"RID": "rid-${replica_id}", "USER_VAR": "v"}, num_replicas=2)
    app_id = run_app(sched, AppDef("ok", [role]))
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.app_id == app_id
    assert desc.num_restarts == 0
    state_dir = home / "local_cwd" / app_id
    assert desc.ui_url == f"file://{state_dir}"
    assert [r.role for r in desc.roles_statuses] == ["sh"]
    replicas = desc.roles_statuses[0].replicas
    assert [(r.id, r.state, r.hostname) for r in replicas] == [
        (0, AppState.SUCCEEDED, "localhost"),
        (1, AppState.SUCCEEDED, "localhost"),
    ]
    assert desc.roles[0].name == "sh"
    assert desc.roles[0].num_replicas == 2
    assert desc.roles[0].env["RID"] == "rid-${replica_id}"
    for i in range(2):
        stdout = list(sched.log_iter(app_id, "sh", i, streams=Stream.STDOUT))
        assert stdout == [
            f"out {i} rid-{i} app={app_id}\n",
            "rank0=localhost unbuf=x user=v\n",
            f"errfile={state_dir}/sh/{i}/error.json\n",
            f"pet={state_dir}/torchelastic/sh\n",
        ]
        assert list(sched.log_iter(app_id, "sh", i, streams=Stream.STDERR)) == [f"err {i}\n"]
        combined = list(sched.log_iter(app_id, "sh", i))
        assert sorted(combined) == sorted([*stdout, f"err {i}\n"])
    success = json.loads((state_dir / "SUCCESS").read_text())
    assert success["final_state"] == "SUCCEEDED"
    assert success["app_id"] == app_id
    assert [r["exitcode"] for r in success["roles"]["sh"]] == [0, 0]
    assert success["roles"]["sh"][1]["stdout"] == f"{state_dir}/sh/1/stdout.log"


def test_private_permissions(sched: LocalScheduler, home: Path) -> None:
    app_id = run_app(sched, AppDef("perm", [sh_role("echo hi")]))
    wait_terminal(sched, app_id)
    state_dir = home / "local_cwd" / app_id
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    for name in ("state.json", "request.json", "SUCCESS", "sh/0/stdout.log", "sh/0/combined.log"):
        assert stat.S_IMODE((state_dir / name).stat().st_mode) == 0o600, name
    for directory in (home, home / "local_cwd", state_dir / "sh", state_dir / "sh" / "0"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


def test_private_permissions_of_a_nested_user_log_dir(
    sched: LocalScheduler, tmp_path: Path
) -> None:
    log_dir = tmp_path / "logs" / "deep"
    app_id = run_app(sched, AppDef("perm", [sh_role("echo hi")]), {"log_dir": str(log_dir)})
    wait_terminal(sched, app_id)
    app_dir = log_dir / "test_session" / app_id
    for directory in (log_dir.parent, log_dir, app_dir.parent, app_dir, app_dir / "sh"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert stat.S_IMODE((app_dir / "SUCCESS").stat().st_mode) == 0o600


def test_failure_exit_code(sched: LocalScheduler, home: Path) -> None:
    app_id = run_app(sched, AppDef("fail", [sh_role("echo bye; exit 3")]))
    assert wait_terminal(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None
    assert "exited with code 3" in desc.msg
    assert desc.roles_statuses[0].replicas[0].state == AppState.FAILED
    assert replica_records(app_id)[0]["exit_code"] == 3
    success = json.loads((home / "local_cwd" / app_id / "SUCCESS").read_text())
    assert success["final_state"] == "FAILED"
    assert success["roles"]["sh"][0]["exitcode"] == 3


def test_one_failing_replica_stops_the_others(sched: LocalScheduler) -> None:
    script = 'if [ "${replica_id}" = 2 ]; then exit 5; fi; exec sleep 600'
    app_id = run_app(sched, AppDef("many", [sh_role(script, num_replicas=4)]))
    assert wait_terminal(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None
    states = [r.state for r in desc.roles_statuses[0].replicas]
    assert states[2] == AppState.FAILED
    assert all(s == AppState.CANCELLED for i, s in enumerate(states) if i != 2)
    assert "sh[2] exited with code 5" in desc.msg


def test_structured_error_from_reply_file(sched: LocalScheduler) -> None:
    reply = {
        "message": {
            "message": "RuntimeError: boom",
            "errorCode": 1,
            "extraInfo": {"timestamp": "1"},
        }
    }
    script = f"echo '{json.dumps(reply)}' > $TORCHELASTIC_ERROR_FILE; exit 1"
    app_id = run_app(sched, AppDef("err", [sh_role(script)]))
    assert wait_terminal(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None
    assert json.loads(desc.structured_error_msg) == reply
    assert json.loads(desc.roles_statuses[0].replicas[0].structured_error_msg) == reply


def test_program_that_cannot_start_is_a_failure(sched: LocalScheduler) -> None:
    # the first attempt deletes its own program, so the retry cannot start it
    script = Path("selfdelete.sh")
    script.write_text('#!/bin/sh\nrm -- "$0"\nexit 1\n')
    script.chmod(0o755)
    role = Role(
        "r", "i", entrypoint="./selfdelete.sh", max_retries=1, retry_policy=RetryPolicy.REPLICA
    )
    app_id = run_app(sched, AppDef("gone", [role]))
    assert wait_terminal(sched, app_id) == AppState.FAILED
    assert replica_records(app_id)[0]["exit_code"] == 127
    (line,) = sched.log_iter(app_id, "r", streams=Stream.STDERR)
    assert "cannot start replica r/0" in line and "selfdelete.sh" in line


def test_retry_replica_policy_restarts_only_the_failed_replica(sched: LocalScheduler) -> None:
    script = (
        'echo run >> runs_${replica_id}; [ "${replica_id}" != 1 ] || [ -e ok_1 ]'
        " || { touch ok_1; exit 1; }"
    )
    role = sh_role(script, num_replicas=2, max_retries=1, retry_policy=RetryPolicy.REPLICA)
    app_id = run_app(sched, AppDef("rep", [role]))
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.num_restarts == 1
    assert Path("runs_0").read_text() == "run\n"
    assert Path("runs_1").read_text() == "run\nrun\n"
    assert [r["attempt"] for r in replica_records(app_id)] == [0, 1]


def _two_role_app(policy: RetryPolicy) -> AppDef:
    # a[1] fails once, after a[0] and b[0] have started their first run
    fail_once = (
        "while [ ! -e runs_a_0 ] || [ ! -e runs_b_0 ]; do sleep 0.01; done;"
        " [ -e ok ] || { touch ok; exit 1; }"
    )
    a = sh_role(
        f'echo run >> runs_a_${{replica_id}}; if [ "${{replica_id}}" = 1 ]; then {fail_once}; fi',
        name="a",
        num_replicas=2,
        max_retries=1,
        retry_policy=policy,
    )
    b = sh_role("echo run >> runs_b_${replica_id}", name="b")
    return AppDef("two", [a, b])


def test_retry_role_policy_restarts_the_failed_role(sched: LocalScheduler) -> None:
    app_id = run_app(sched, _two_role_app(RetryPolicy.ROLE))
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    assert Path("runs_a_0").read_text() == "run\nrun\n"
    assert Path("runs_a_1").read_text() == "run\nrun\n"
    assert Path("runs_b_0").read_text() == "run\n"
    desc = sched.describe(app_id)
    assert desc is not None and desc.num_restarts == 1


def test_retry_application_policy_restarts_everything(sched: LocalScheduler) -> None:
    app_id = run_app(sched, _two_role_app(RetryPolicy.APPLICATION))
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    assert Path("runs_a_0").read_text() == "run\nrun\n"
    assert Path("runs_a_1").read_text() == "run\nrun\n"
    assert Path("runs_b_0").read_text() == "run\nrun\n"
    desc = sched.describe(app_id)
    assert desc is not None and desc.num_restarts == 1


def test_retries_exhausted(sched: LocalScheduler) -> None:
    role = sh_role("echo attempt; exit 2", max_retries=2, retry_policy=RetryPolicy.REPLICA)
    app_id = run_app(sched, AppDef("bad", [role]))
    assert wait_terminal(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.num_restarts == 2
    # the logs of every attempt are kept
    assert list(sched.log_iter(app_id, "sh", streams=Stream.STDOUT)) == ["attempt\n"] * 3


def test_no_output_lost_when_exiting_right_after_printing(sched: LocalScheduler) -> None:
    n = 200_000
    code = (
        "import sys, os\n"
        f"sys.stdout.write(''.join(f'line {{i}}\\n' for i in range({n})))\n"
        "sys.stderr.write('e' * 100000 + '\\n')\n"
        "sys.stdout.write('no newline at the end')\n"
        "sys.stdout.flush(); os._exit(0)\n"
    )
    role = Role("py", "i", entrypoint=sys.executable, args=["-c", code])
    app_id = run_app(sched, AppDef("burst", [role]))
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    expected = "".join(f"line {i}\n" for i in range(n)) + "no newline at the end"
    out = "".join(sched.log_iter(app_id, "py", streams=Stream.STDOUT))
    assert out == expected
    combined = list(sched.log_iter(app_id, "py"))
    assert len(combined) == n + 2
    assert "e" * 100000 + "\n" in combined
    assert "".join(line for line in combined if not line.startswith("eeee")) == expected


def test_kill_9_of_a_replica_is_recorded(sched: LocalScheduler) -> None:
    app_id = run_app(sched, AppDef("k9", [sh_role("exec sleep 600")]))
    pid = _wait_for_replica_pid(app_id)
    os.kill(pid, 9)
    assert wait_terminal(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None
    assert "SIGKILL" in desc.msg
    assert replica_records(app_id)[0]["exit_code"] == -9


def test_a_stop_from_outside_restarts_as_the_next_attempt(sched: LocalScheduler) -> None:
    """SIGTERM sent to a replica from outside (as a preemption does) is an interruption:
    the replica starts again with TORCHX_ATTEMPT one higher, max_retries (0) unspent."""
    script = 'echo "attempt $TORCHX_ATTEMPT"; [ "$TORCHX_ATTEMPT" != 0 ] || exec sleep 600'
    app_id = run_app(sched, AppDef("preempted", [sh_role(script)]))
    os.kill(_wait_for_replica_pid(app_id), signal.SIGTERM)
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    desc = sched.describe(app_id)
    assert desc is not None and desc.num_restarts == 1
    out = "".join(sched.log_iter(app_id, "sh", streams=Stream.STDOUT))
    assert out == "attempt 0\nattempt 1\n"


def test_own_failure_is_retried_only_within_max_retries(sched: LocalScheduler) -> None:
    role = sh_role('echo "attempt $TORCHX_ATTEMPT"; exit 3', max_retries=1)
    app_id = run_app(sched, AppDef("fails", [role]))
    assert wait_terminal(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None and desc.num_restarts == 1 and "code 3" in desc.msg
    out = "".join(sched.log_iter(app_id, "sh", streams=Stream.STDOUT))
    assert out == "attempt 0\nattempt 1\n"


def _wait_for_replica_pid(app_id: str, role_idx: int = 0, k: int = 0) -> int:
    while True:
        rec = replica_records(app_id, role_idx)[k]
        if rec["state"] == "RUNNING" and rec["pid"]:
            return int(rec["pid"])
        time.sleep(0.01)


def test_status_right_after_schedule_is_complete(sched: LocalScheduler) -> None:
    app_id = run_app(sched, AppDef("fresh", [sh_role("exec sleep 600", num_replicas=3)]))
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.RUNNING
    assert all(rec["pid"] for rec in replica_records(app_id))
    sched.cancel(app_id)
    assert wait_terminal(sched, app_id) == AppState.CANCELLED


# ---------------------------------------------------------------------------------------------
# logs


def test_log_iter_errors_and_filters(sched: LocalScheduler) -> None:
    app_id = run_app(sched, AppDef("logs", [sh_role("printf 'a1\\nb2\\na3\\n'", num_replicas=2)]))
    wait_terminal(sched, app_id)
    assert list(sched.log_iter(app_id, "sh", 1, regex="^a")) == ["a1\n", "a3\n"]
    with pytest.raises(ValueError, match="no role 'nope'"):
        sched.log_iter(app_id, "nope")
    with pytest.raises(ValueError, match="no replica 2"):
        sched.log_iter(app_id, "sh", 2)
    with pytest.raises(ValueError, match="unknown local_cwd app"):
        sched.log_iter("missing-app", "sh")
    import datetime

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lines = list(sched.log_iter(app_id, "sh", since=datetime.datetime.now()))
    assert lines == ["a1\n", "b2\n", "a3\n"]
    assert any("since/until" in str(w.message) for w in caught)
    stdout = os.path.join(st.app_state_dir(app_id), "sh", "0", "stdout.log")
    assert list(LogIterator(app_id, stdout, sched)) == ["a1\n", "b2\n", "a3\n"]


def test_tail_follows_until_the_app_ends(sched: LocalScheduler) -> None:
    script = "echo first; while [ ! -e go ]; do sleep 0.01; done; printf 'second\\nthird'"
    app_id = run_app(sched, AppDef("tail", [sh_role(script)]))
    lines = iter(sched.log_iter(app_id, "sh", should_tail=True))
    assert next(lines) == "first\n"
    Path("go").touch()
    assert list(lines) == ["second\n", "third"]
    assert sched.describe(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]


def test_log_iterator_waits_for_a_file_and_fails_if_never_written(
    sched: LocalScheduler, tmp_path: Path
) -> None:
    app_id = run_app(
        sched, AppDef("wf", [sh_role("while [ ! -e go ]; do sleep 0.01; done; echo x > late.log")])
    )
    late = Path("late.log").absolute()
    assert list(LogIterator(app_id, str(late), sched, should_tail=False)) == []
    follower = iter(LogIterator(app_id, str(late), sched, should_tail=True))
    Path("go").touch()
    assert list(follower) == ["x\n"]
    with pytest.raises(RuntimeError, match="without writing"):
        list(LogIterator(app_id, str(tmp_path / "never.log"), sched))


# ---------------------------------------------------------------------------------------------
# list / delete / cancel


def test_list_and_delete(sched: LocalScheduler, home: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    a = run_app(sched, AppDef("one", [sh_role("true")]))
    b = run_app(sched, AppDef("two", [sh_role("exec sleep 600")]), {"log_dir": str(logs)})
    wait_terminal(sched, a)
    rows = {r.app_id: r for r in sched.list()}
    assert set(rows) == {a, b}
    assert rows[a].state == AppState.SUCCEEDED
    assert rows[a].app_handle == f"local_cwd://test_session/{a}"
    assert rows[a].name == "one"
    assert rows[b].state == AppState.RUNNING
    sched.delete(b)
    assert sched.describe(b) is None
    assert not (home / "local_cwd" / b).exists()
    assert (logs / "test_session" / b / "sh" / "0" / "stdout.log").exists()  # user logs are kept
    sched.delete(a)
    assert not (home / "local_cwd" / a).exists()
    sched.delete("never-existed")
    assert sched.list() == []


def test_cancel_is_idempotent_and_final(sched: LocalScheduler) -> None:
    app_id = run_app(sched, AppDef("c", [sh_role("exec sleep 600")]))
    sched.cancel(app_id)
    sched.cancel(app_id)
    assert wait_terminal(sched, app_id) == AppState.CANCELLED
    sched.cancel(app_id)
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.CANCELLED
    assert desc.roles_statuses[0].replicas[0].state == AppState.CANCELLED
    assert "cancelled" in desc.msg


def test_unknown_app(sched: LocalScheduler) -> None:
    assert sched.describe("nope-123") is None
    assert sched.describe("../escape") is None
    assert not sched.exists("nope-123")
    sched.cancel("nope-123")
    sched.wait_for_change("nope-123", 5)


def test_finished_apps_beyond_cache_size_are_evicted(home: Path) -> None:
    sched = create_scheduler("s", cache_size=1)
    ids = []
    for _ in range(11):
        ids.append(run_app(sched, AppDef("e", [sh_role("true")])))
        wait_terminal(sched, ids[-1])
    assert len(os.listdir(home / "local_cwd")) == 11
    last = run_app(sched, AppDef("e", [sh_role("true")]))
    assert os.listdir(home / "local_cwd") == [last]


def test_spawned_supervisor(sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_LOCAL_CWD_SUPERVISOR", "spawn")
    app_id = run_app(sched, AppDef("sp", [sh_role("echo spawned; exit 4")]))
    assert wait_terminal(sched, app_id) == AppState.FAILED
    assert list(sched.log_iter(app_id, "sh")) == ["spawned\n"]


def test_threads_in_the_launcher_disable_forking() -> None:
    import threading

    from torchx.schedulers._local import launcher as local_launcher

    release = threading.Event()
    t = threading.Thread(target=release.wait)
    t.start()
    try:
        assert not local_launcher.can_fork()
    finally:
        release.set()
        t.join()


def test_bad_start_method_is_rejected(
    sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    monkeypatch.setenv("TORCHX_LOCAL_CWD_SUPERVISOR", "thread")
    with pytest.raises(ValueError, match="thread"):
        run_app(sched, AppDef("x", [sh_role("true")]))
    assert os.listdir(home / "local_cwd") == []


def _children_of_this_process() -> set[int]:
    me = os.getpid()
    with open(f"/proc/{me}/task/{me}/children") as f:
        return {int(pid) for pid in f.read().split()}


def test_a_failed_schedule_leaves_no_supervisor_behind(
    sched: LocalScheduler, home: Path, tmp_path: Path
) -> None:
    # the supervisor is forked before the log files are created; when creating them fails
    # it must exit on its own instead of waiting for an app that will never exist
    # log_dir itself is a directory (so the dry run accepts it), its session subdir is not
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / sched.session_name).write_text("not a directory")
    before = _children_of_this_process()
    with pytest.raises(ValueError, match="log_dir"):
        sched.submit(AppDef("a", [Role("r", "i", entrypoint="true")]), {"log_dir": str(log_dir)})
    started = _children_of_this_process() - before
    wait_until(
        lambda: all(st.proc_start_ticks(pid) is None for pid in started),
        "the forked supervisor to exit",
    )
    assert os.listdir(home / "local_cwd") == []


def test_replicas_start_with_default_signal_dispositions(sched: LocalScheduler) -> None:
    # Python (hence the supervisor) ignores SIGPIPE and SIGXFSZ; replicas must not inherit
    # that, or `producer | head` pipelines in them would never end
    app_id = run_app(sched, AppDef("sig", [sh_role("grep SigIgn /proc/self/status")]))
    assert wait_terminal(sched, app_id) == AppState.SUCCEEDED
    (line,) = sched.log_iter(app_id, "sh")
    ignored = int(line.split()[1], 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (sig - 1)), line


def test_ended_apps_leave_no_descriptors_in_the_launcher(sched: LocalScheduler) -> None:
    warm_up = run_app(sched, AppDef("w", [sh_role("true")]))
    assert wait_terminal(sched, warm_up) == AppState.SUCCEEDED
    before = len(os.listdir("/proc/self/fd"))
    observer = create_scheduler("observer")
    ids = [run_app(sched, AppDef(f"q{i}", [sh_role("true")])) for i in range(3)]
    for app_id in ids:  # watched by another scheduler: `sched` never sees them end
        assert wait_terminal(observer, app_id) == AppState.SUCCEEDED
        pid = state_doc(app_id)["supervisor"]["pid"]
        wait_until(lambda pid=pid: st.proc_start_ticks(pid) is None, "the supervisor to exit")
    # scheduling again closes the pipes of the apps that ended; waiting closes the last one
    last = run_app(sched, AppDef("last", [sh_role("true")]))
    assert wait_terminal(sched, last) == AppState.SUCCEEDED
    assert len(os.listdir("/proc/self/fd")) == before


def test_run_local_job_starts_a_new_session(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with open(out, "wb") as f:
        proc = run_local_job(
            ["sh", "-c", "echo $X; ps -o sid= -p $$"], {"X": "1", "PATH": os.environ["PATH"]}, f, f
        )
        assert proc.wait() == 0
    first, sid = out.read_text().split()
    assert first == "1"
    assert int(sid) == proc.pid


def test_dryrun_info_roundtrip_is_schedulable(sched: LocalScheduler) -> None:
    info: AppDryRunInfo[PopenRequest] = sched.submit_dryrun(AppDef("d", [sh_role("echo $E")]), {})
    info.request.role_params["sh"][0].env["E"] = "edited"
    app_id = sched.schedule(info)
    wait_terminal(sched, app_id)
    assert list(sched.log_iter(app_id, "sh")) == ["edited\n"]


def test_macros_values_fields_are_substituted(sched: LocalScheduler) -> None:
    role = Role(
        "r",
        "i",
        entrypoint="echo",
        args=[macros.img_root, macros.app_id, macros.replica_id, macros.rank0_env],
    )
    p = sched.submit_dryrun(AppDef("m", [role]), {}).request.role_params["r"][0]
    assert p.args[1:] == [os.getcwd(), p.args[2], "0", "TORCHX_RANK0_HOST"]


def test_resources_round_trip_in_describe(sched: LocalScheduler) -> None:
    role = sh_role(
        "true",
        resource=Resource(cpu=2, gpu=0, memMB=64, capabilities={"k": "v"}),
        port_map={"p": 1},
    )
    app_id = run_app(sched, AppDef("res", [role], metadata={"team": "x"}))
    wait_terminal(sched, app_id)
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.roles[0].resource == Resource(cpu=2, gpu=0, memMB=64, capabilities={"k": "v"})
    assert desc.roles[0].port_map == {"p": 1}
    assert desc.metadata == {"team": "x"}


@pytest.mark.parametrize(
    ("app_name", "role_name", "expected"),
    [
        (
            "a",
            "../../../escaped-role",
            r"role name \(app 'a'\) '\.\./\.\./\.\./escaped-role' contains '/'",
        ),
        ("a", "..", r"role name .* is empty, '\.' or '\.\.'"),
        ("a", "x\ny", "contains a control character"),
        ("a" * 300, "r", r"app name 'a{57}\.\.\.' is longer than 200 bytes"),
    ],
)
def test_names_that_would_escape_their_directory_are_refused(
    sched: LocalScheduler, home: Path, app_name: str, role_name: str, expected: str
) -> None:
    app = AppDef(app_name, [Role(role_name, "i", entrypoint="true")])
    with pytest.raises(ValueError, match=expected):
        sched.submit(app, {})
    assert not (home / "local_cwd").exists() or not os.listdir(home / "local_cwd")
    assert not (home.parent / "escaped-role").exists()


def test_local_directory_provider_fetch_of_a_missing_directory_raises(tmp_path: Path) -> None:
    """As upstream's: ``fetch`` itself refuses (a dry run only warns, through fetch_role)."""
    from torchx.schedulers.local_scheduler import LocalDirectoryImageProvider

    provider = LocalDirectoryImageProvider()
    assert provider.fetch(str(tmp_path)) == str(tmp_path)
    with pytest.raises(ValueError, match="must be an existing local directory"):
        provider.fetch(str(tmp_path / "missing"))


def test_stream_is_importable_from_the_runner_api() -> None:
    from torchx.runner.api import Stream
    from torchx.schedulers.api import Stream as SchedulerStream

    assert Stream is SchedulerStream


def test_a_supervisor_that_cannot_start_is_reported_at_the_first_look(
    sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``schedule`` returns while the supervisor starts the replicas; if it cannot, the
    first look at the app says why, and the app is gone (as a failed ``schedule`` leaves
    nothing behind)."""
    from torchx.schedulers._local import supervisor

    def cannot_start(self: object) -> None:
        raise RuntimeError("no replicas today")

    monkeypatch.setattr(supervisor.Supervisor, "take_over", cannot_start)  # the fork inherits it
    app_id = run_app(sched, AppDef("nope", [sh_role("true")]))
    with pytest.raises(RuntimeError, match=r"(?s)exited before taking over the app.*no replicas"):
        sched.describe(app_id)
    assert sched.describe(app_id) is None
    monkeypatch.undo()
    assert wait_terminal(sched, run_app(sched, AppDef("ok", [sh_role("true")]))) == (
        AppState.SUCCEEDED
    )


def test_a_cancel_while_the_supervisor_takes_the_app_over_is_not_lost(
    sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A canceller writes the cancel file, then looks for the supervisor's pid in the state;
    a supervisor that checked for the file just before must see it after writing its pid."""
    from torchx.schedulers._local import supervisor

    start_all = supervisor.Supervisor._start_all

    def start_then_a_cancel_arrives(self: supervisor.Supervisor, reps: list[object]) -> None:
        start_all(self, reps)  # type: ignore[arg-type]
        # a canceller, right now: the file exists, the state has no pid yet
        st.create_private_file(os.path.join(self.state_dir, st.CANCEL_FILE))

    monkeypatch.setattr(supervisor.Supervisor, "_start_all", start_then_a_cancel_arrives)
    app_id = run_app(sched, AppDef("c", [sh_role("sleep 30")]))
    assert wait_terminal(sched, app_id) == AppState.CANCELLED
