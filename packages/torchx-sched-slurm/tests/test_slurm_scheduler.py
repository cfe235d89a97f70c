"""The slurm scheduler without a cluster: requests, scripts, quoting, checks, errors.

Jobs on a real cluster are tested in the top-level tests/slurm.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from string import Template

import pytest

from torchx.schedulers._slurm.commands import SlurmNotFoundError
from torchx.schedulers.slurm_scheduler import (
    SBATCH_GROUP_OPTIONS,
    SBATCH_JOB_OPTIONS,
    Opts,
    SlurmBatchRequest,
    SlurmOpts,
    SlurmReplicaRequest,
    SlurmScheduler,
    create_scheduler,
)
from torchx.specs import AppDef, Resource, Role, Workspace, macros
from torchx.util.support.host_checks import real_submit

NASTY = [
    "$(touch /tmp/pwned)",
    "`id`",
    "it's",
    'say "hi"',
    "two words",
    "line1\nline2",
    "ünï ✓",
    ":",
    "$HOME ${app_id} $$x",
    "",
    "-",
    "a\\b",
]


@pytest.fixture
def sched() -> SlurmScheduler:
    return create_scheduler("test")


@pytest.fixture
def no_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH with python and bash but none of Slurm's commands."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "printf"):
        os.symlink(f"/usr/bin/{tool}", bin_dir / tool)
    os.symlink(sys.executable, bin_dir / "python3")
    monkeypatch.setenv("PATH", str(bin_dir))


def app_of(*roles: Role, name: str = "train") -> AppDef:
    return AppDef(name=name, roles=list(roles))


def role(name: str = "trainer", n: int = 1, **kwargs: object) -> Role:
    kwargs.setdefault("entrypoint", "bash")
    kwargs.setdefault("args", ["-c", "true"])
    return Role(name=name, image="/img", num_replicas=n, **kwargs)  # type: ignore[arg-type]


_HAS_IMAGE_BUILDER = importlib.util.find_spec("torchx.workspace.docker_workspace") is not None


def test_an_image_workspace_without_its_package_names_the_extra(sched: SlurmScheduler) -> None:
    if _HAS_IMAGE_BUILDER:
        pytest.skip("torchx-workspace-docker is installed in this environment")
    with pytest.raises(
        ValueError,
        match=r"^workspace_type=docker needs torchx-workspace-docker.*"
        r"pip install 'torchx-sched-slurm\[workspace\]'$",
    ):
        sched.workspace_builder({"workspace_type": "docker"})


class TestRunOpts:
    def test_every_upstream_option_plus_list_window(self, sched: SlurmScheduler) -> None:
        opts = sched.run_opts()
        keys = [k for k, _ in opts]
        assert keys == [
            "account",
            "partition",
            "time",
            "comment",
            "constraint",
            "mail-user",
            "mail-type",
            "job_dir",
            "qos",
            "list_days",
            "requeue",
            "signal",
            "max_requeues",
            "container",
            "container_cache",
            "ssh",
            "strict_entrypoint",
            "workspace_type",  # dir (the default), or docker with torchx-workspace-docker
            *(["image_repo", "quiet", "build_args"] if _HAS_IMAGE_BUILDER else []),
        ]
        assert opts.get("workspace_type").default == "dir"  # type: ignore[union-attr]
        assert opts.get("list_days").default == 3  # type: ignore[union-attr]
        assert opts.get("max_requeues").default == 10  # type: ignore[union-attr]
        assert SlurmOpts is Opts
        assert set(SBATCH_JOB_OPTIONS) | set(SBATCH_GROUP_OPTIONS) <= set(keys)


class TestRequest:
    def test_one_het_component_per_replica(self, sched: SlurmScheduler) -> None:
        app = app_of(
            role("trainer", 2, resource=Resource(cpu=2, gpu=0, memMB=1024)),
            role("ps", 1, max_retries=0),
        )
        app.roles[0].max_retries = 2
        cfg = {"partition": "debug", "time": "10", "account": "acct", "comment": "c d"}
        req = sched.submit_dryrun(app, cfg).request
        assert isinstance(req, SlurmBatchRequest)
        assert list(req.replicas) == ["trainer-0", "trainer-1", "ps-0"]
        assert req.cmd == ["sbatch", "--parsable", "--account=acct", "--comment=c d"]
        assert req.max_retries == 0  # the smallest of the roles'
        script = req.materialize()
        assert script.count("#SBATCH hetjob") == 2
        first = next(line for line in script.splitlines() if line.startswith("#SBATCH --job"))
        assert first.startswith(
            "#SBATCH --job-name=train:trainer-0 --requeue --partition=debug --time=10"
            " --ntasks-per-node=1 --cpus-per-task=2"
        )
        assert "--job-name=train:ps-0" in script
        assert "scontrol requeue" in script and "export SLURM_UNBUFFEREDIO=1" in script
        assert repr(req).startswith("sbatch --parsable --account=acct '--comment=c d' $SBATCH")

    def test_macros_per_replica(self, sched: SlurmScheduler) -> None:
        r = role(
            "w",
            2,
            entrypoint="echo",
            args=[macros.replica_id, macros.img_root, f"${{{macros.rank0_env[2:-1]}}}"],
            env={"ID": f"app={macros.app_id}", "R": macros.replica_id},
        )
        req = sched.submit_dryrun(app_of(r), {}).request
        one = req.replicas["w-1"]
        assert one.args == ["1", "/img", "SLURM_JOB_NODELIST_HET_GROUP_0"]
        assert one.env["R"] == "1"
        # the job id is spliced in when the batch script writes the env file
        assert run_replica_locally(one, job_id="77") == b"1 /img SLURM_JOB_NODELIST_HET_GROUP_0\n"
        written = subprocess.run(
            ["bash", "-c", f"SLURM_JOB_ID=77; printf '%s\\n' {' '.join(one.env_file())}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "export ID='app=77'" in written.splitlines()

    def test_sanitized_names_and_log_files(self, sched: SlurmScheduler, tmp_path: Path) -> None:
        r = role("my role/x", 1)
        req = sched.submit_dryrun(app_of(r, name="my app"), {"job_dir": str(tmp_path / "j")})
        one = req.request.replicas["my_role_x-0"]
        assert one.name == "my_app:my_role_x-0"
        assert one.srun_opts["output"].startswith(f"{tmp_path}/j/slurm-")
        assert req.request.roles == {"my role/x": 1}

    def test_memory_and_gpu_flags(self) -> None:
        replica = SlurmReplicaRequest.from_role(
            "t-0", role(resource=Resource(cpu=4, gpu=0, memMB=2000)), {}, nomem=True
        )
        assert "mem" not in replica.sbatch_opts
        assert replica.sbatch_opts["cpus-per-task"] == "4"

    def test_ten_thousand_replicas(self, sched: SlurmScheduler) -> None:
        req = sched.submit_dryrun(app_of(role("w", 10_000)), {}).request
        assert len(req.replicas) == 10_000
        assert req.materialize().count("#SBATCH hetjob") == 9_999


def run_replica_locally(replica: SlurmReplicaRequest, job_id: str = "4242") -> bytes:
    """Runs the program part of a replica's srun line with bash, as the batch script does
    (which first writes the replica's env file)."""
    import tempfile

    with tempfile.TemporaryDirectory() as env_dir:
        _, srun = replica.materialize(env_dir)
        program = srun[len(replica.srun_opts) :]
        env_file = shlex.quote(replica.env_path(env_dir))
        script = (
            f"SLURM_JOB_ID={job_id}\n"
            f"printf '%s\\n' {' '.join(replica.env_file())} >{env_file}\n"
            + " ".join(program)
            + "\n"
        )
        return subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout


class TestInjectionSafety:
    """Arguments and env values reach the program byte for byte (srun aside)."""

    DUMP = "import sys, os, json; print(json.dumps([sys.argv[1:], os.environ['V']]))"

    @pytest.mark.parametrize("args", [NASTY, [a for a in NASTY if a != ":"]])
    def test_round_trip_through_bash(self, sched: SlurmScheduler, args: list[str]) -> None:
        value = "v $(x) `y` 'q' \"d\"\nnext ü ${app_id}"
        r = role("w", 1, entrypoint="python3", args=["-c", self.DUMP, *args], env={"V": value})
        replica = sched.submit_dryrun(app_of(r), {}).request.replicas["w-0"]
        got = json.loads(run_replica_locally(replica))
        # macros use string.Template rules: ${app_id} is the job id, $$ a literal $
        expected = [Template(a).safe_substitute(app_id="4242") for a in args]
        assert got == [expected, value.replace("${app_id}", "4242")]

    def test_env_reaches_the_replica_but_not_the_srun_line(self, sched: SlurmScheduler) -> None:
        """Env values are read from the replica's private file (sacct's SubmitLine and ps
        show the srun line to every user); names no shell can assign still arrive."""
        env = {"HF_TOKEN": "hf-secret-1", "MY-VAR": "m x", "A=1;B": "v", "PLAIN": "p ${app_id}"}
        dump = "import os, json; print(json.dumps({k: os.environ.get(k) for k in %r}))"
        r = role(
            "w",
            1,
            entrypoint="python3",
            args=["-c", dump % ["HF_TOKEN", "MY-VAR", "A", "PLAIN"]],
            env=env,
        )
        replica = sched.submit_dryrun(app_of(r), {}).request.replicas["w-0"]
        _, srun = replica.materialize()
        assert not any(value in " ".join(srun) for value in ("hf-secret-1", "m x", "A=1"))
        got = json.loads(run_replica_locally(replica, job_id="99"))
        assert got == {"HF_TOKEN": "hf-secret-1", "MY-VAR": "m x", "A": "1;B=v", "PLAIN": "p 99"}

    def test_a_colon_argument_keeps_srun_from_splitting(self, sched: SlurmScheduler) -> None:
        r = role("w", 1, entrypoint="echo", args=["a", ":", "b"])
        _, srun = sched.submit_dryrun(app_of(r), {}).request.replicas["w-0"].materialize()
        assert ":" not in srun  # srun would start a new het component at a ":" word

    def test_option_values_cannot_break_the_header(self, sched: SlurmScheduler) -> None:
        with pytest.raises(ValueError, match="partition="):
            sched.submit_dryrun(app_of(role()), {"partition": "a\n#SBATCH --x"})


class TestAttempts:
    def test_every_attempt_is_numbered_and_appends_to_the_logs(self, sched: SlurmScheduler) -> None:
        script = sched.submit_dryrun(app_of(role("a"), role("b")), {}).request.materialize()
        assert 'export TORCHX_ATTEMPT="${SLURM_RESTART_COUNT:-0}"' in script
        headers = [line for line in script.splitlines() if line.startswith("#SBATCH --job")]
        assert all(" --requeue " in line for line in headers)
        assert headers[0].endswith("--open-mode=append")  # the batch log of every attempt
        assert script.count("--open-mode=append") == 3  # and each replica's
        assert "=== torchx: attempt $TORCHX_ATTEMPT ===" in script
        assert "requeued: TIMEOUT" not in script  # no warning signal asked for

    def test_requeue_off(self, sched: SlurmScheduler) -> None:
        script = sched.submit_dryrun(app_of(role()), {"requeue": False}).request.materialize()
        assert " --no-requeue " in script and " --requeue " not in script

    def test_signal_reaches_every_component(self, sched: SlurmScheduler) -> None:
        cfg = {"signal": "USR1@120", "time": "60"}
        req = sched.submit_dryrun(app_of(role(n=2)), cfg).request
        assert req.warning_lead_s == 120
        script = req.materialize()
        headers = [line for line in script.splitlines() if line.startswith("#SBATCH --job")]
        assert all(" --signal=USR1@120 " in line for line in headers)
        assert "-le 180 ]" in script and "requeued: TIMEOUT" in script
        without_requeue = {**cfg, "requeue": False}
        assert sched.submit_dryrun(app_of(role()), without_requeue).request.warning_lead_s is None

    def test_requeues_after_the_warning_are_bounded(self, sched: SlurmScheduler) -> None:
        cfg = {"signal": "USR1@120", "time": "60", "max_requeues": 3}
        script = sched.submit_dryrun(app_of(role()), cfg).request.materialize()
        assert "grep -c '^torchx: requeueing: TIMEOUT'" in script
        assert (
            '-ge 3 ]; then\n        echo "torchx: not requeued: TIMEOUT, every requeue spent'
            ' (max_requeues=3)"'
        ) in script
        default = sched.submit_dryrun(app_of(role()), {"signal": "USR1@120"}).request
        assert "-ge 10 ]" in default.materialize()
        with pytest.raises(ValueError, match=r"^max_requeues=-1 is negative; give 0 "):
            sched.submit_dryrun(app_of(role()), {**cfg, "max_requeues": -1})

    @pytest.mark.parametrize(
        ("value", "lead"), [("USR1", 60), ("SIGUSR2@300", 300), ("R:10@5", 5), ("term@90", 90)]
    )
    def test_signal_in_sbatch_syntax(self, sched: SlurmScheduler, value: str, lead: int) -> None:
        assert sched.submit_dryrun(app_of(role()), {"signal": value}).request.warning_lead_s == lead

    @pytest.mark.parametrize(
        ("value", "problem"),
        [
            ("B:USR1@60", "would reach only the batch shell"),
            ("USR9@60", "is not a Slurm warning signal"),
            ("USR1@soon", "is not a Slurm warning signal"),
            ("USR1@99999", "is not a Slurm warning signal"),
            ("0", "is not a Slurm warning signal"),
        ],
    )
    def test_bad_signal_is_one_line(self, sched: SlurmScheduler, value: str, problem: str) -> None:
        with pytest.raises(ValueError, match=problem) as e:
            sched.submit_dryrun(app_of(role()), {"signal": value})
        assert "\n" not in str(e.value) and "signal=" in str(e.value)

    def test_script_is_valid_bash(self, sched: SlurmScheduler) -> None:
        cfg = {"signal": "USR1@120", "time": "60"}
        script = sched.submit_dryrun(app_of(role(max_retries=2)), cfg).request.materialize()
        subprocess.run(["bash", "-n"], input=script, text=True, check=True)


class TestChecksBeforeQueueing:
    def test_malformed_time(self, sched: SlurmScheduler) -> None:
        with pytest.raises(ValueError, match=r"time='1h' is not a Slurm time limit"):
            sched.submit_dryrun(app_of(role()), {"time": "1h"})

    def test_missing_entrypoint_warns_unless_strict(
        self, sched: SlurmScheduler, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Compute nodes may have programs the submit host lacks: a real submit warns,
        `strict_entrypoint` refuses, and a dry run never fails."""
        app = app_of(role(entrypoint="no-such-prog", args=[]))
        with real_submit():
            sched.submit_dryrun(app, {})
        assert "'no-such-prog' of role 'trainer' is not on this host's PATH" in caplog.text
        assert "queued anyway" in caplog.text
        with real_submit(), pytest.raises(FileNotFoundError, match="'no-such-prog' of role"):
            sched.submit_dryrun(app, {"strict_entrypoint": True})
        caplog.clear()
        sched.submit_dryrun(app, {"strict_entrypoint": True})  # a dry run: one warning
        assert "a real run would be refused" in caplog.text
        assert sched.run_opts().get("strict_entrypoint") is not None

    def test_strict_entrypoint_path_must_be_an_executable_file(
        self, sched: SlurmScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        entry = app_of(role(entrypoint="./run.sh", args=[]))
        strict = {"strict_entrypoint": True}
        with real_submit(), pytest.raises(FileNotFoundError, match=r"'\./run\.sh' of role"):
            sched.submit_dryrun(entry, strict)
        script = tmp_path / "run.sh"
        script.write_text("#!/bin/sh\n")
        with real_submit(), pytest.raises(FileNotFoundError, match="not an executable file"):
            sched.submit_dryrun(entry, strict)  # exec would be refused
        script.chmod(0o755)
        with real_submit():
            sched.submit_dryrun(entry, strict)

    def test_missing_script(
        self,
        sched: SlurmScheduler,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        monkeypatch.chdir(tmp_path)
        for r in (
            role(entrypoint="python3", args=["-u", "train.py", "--lr", "1"]),
            role(args=["-c", "torchrun --nnodes 1 --rdzv_backend c10d --standalone train.py"]),
        ):
            with real_submit(), pytest.raises(FileNotFoundError, match=r"script 'train\.py'"):
                sched.submit_dryrun(app_of(r), {})
            caplog.clear()
            sched.submit_dryrun(app_of(r), {})  # a dry run only warns
            assert "script 'train.py'" in caplog.text
        (tmp_path / "train.py").write_text("")
        with real_submit():
            sched.submit_dryrun(app_of(role(entrypoint="python3", args=["train.py"])), {})
            # modules, -c code and scripts behind variables cannot be checked: accepted
            sched.submit_dryrun(app_of(role(entrypoint="python3", args=["-m", "nope"])), {})
            sched.submit_dryrun(app_of(role(entrypoint="python3", args=["$X/t.py"])), {})

    def test_existing_job_dir(self, sched: SlurmScheduler, tmp_path: Path) -> None:
        with pytest.raises(FileExistsError, match="already exists"):
            sched._pre_build_validate(app_of(role()), "slurm", {"job_dir": str(tmp_path)})

    def test_job_ids_are_numbers(self, sched: SlurmScheduler) -> None:
        with pytest.raises(ValueError, match="'abc' is not a Slurm job id"):
            sched.describe("abc")


class TestWithoutSlurm:
    @pytest.mark.usefixtures("no_slurm")
    def test_schedule_says_sbatch_is_missing(self, sched: SlurmScheduler, tmp_path: Path) -> None:
        project = tmp_path / "project"
        project.mkdir()
        (project / "run.sh").write_text("true\n")
        job_dir = tmp_path / "job"
        app = app_of(role(workspace=Workspace({str(project): ""})))
        cfg = {"job_dir": str(job_dir)}
        sched.build_workspaces(app.roles, cfg)
        assert (job_dir / "run.sh").exists()
        info = sched.submit_dryrun(app, cfg)
        with pytest.raises(SlurmNotFoundError) as err:
            sched.schedule(info)
        assert str(err.value) == (
            "sbatch not found: install Slurm's client tools or run on a login node"
        )
        assert not job_dir.exists()  # no half-made job dir

    @pytest.mark.usefixtures("no_slurm")
    def test_status_says_squeue_is_missing(self, sched: SlurmScheduler) -> None:
        with pytest.raises(SlurmNotFoundError, match="squeue not found"):
            sched.describe("12")

    @pytest.mark.usefixtures("no_slurm")
    def test_dryrun_works_off_cluster(self, sched: SlurmScheduler) -> None:
        app = app_of(role(resource=Resource(cpu=1, gpu=0, memMB=512)))
        assert "--mem=512" in sched.submit_dryrun(app, {}).request.materialize()


def test_job_ids_sort_numerically_with_array_tasks() -> None:
    from torchx.schedulers.slurm_scheduler import _job_order

    ids = ["13", "12_[3-5]", "9", "12_2", "100"]
    assert sorted(ids, key=_job_order) == ["9", "12_2", "12_[3-5]", "13", "100"]


def test_every_macro_is_substituted_like_the_other_schedulers() -> None:
    from torchx.schedulers.slurm_scheduler import create_scheduler
    from torchx.specs import AppDef, Role, macros

    role = Role(
        name="r",
        image="/img",
        entrypoint="echo",
        args=[macros.img_root, macros.base_img_root, macros.replica_id],
    )
    req = create_scheduler("t").submit_dryrun(AppDef("a", [role]), {}).request
    script = req.materialize()
    assert "echo /img DEPRECATED 0" in script
    assert "base_img_root" not in script


class TestScriptQuoting:
    """One quoting function per context of the generated script."""

    def test_sbatch_values(self) -> None:
        from torchx.schedulers._slurm.request import sbatch_value

        assert sbatch_value("partition", "debug") == "debug"
        assert sbatch_value("output", "/a b/it's/slurm-%j.out") == '"/a b/it\'s/slurm-%j.out"'
        assert sbatch_value("output", 'q"\\') == '"q\\"\\\\"'
        with pytest.raises(ValueError, match=r"^output '/a\\nb' contains a line break"):
            sbatch_value("output", "/a\nb")

    def test_comment_lines_cannot_end_early(self, sched: SlurmScheduler) -> None:
        from torchx.schedulers._slurm.request import comment_text

        assert comment_text("sbatch --comment='x\n    touch y #'") == (
            "sbatch --comment='x\\n    touch y #'"
        )
        script = sched.submit_dryrun(app_of(role()), {"comment": "ok one"}).request.materialize()
        header = [line for line in script.splitlines() if line.startswith("# Run with:")]
        assert header == ["# Run with: sbatch --parsable '--comment=ok one'"]

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("comment", "x\n    touch /tmp/pwned #"),
            ("account", "a\nb"),
            ("mail-user", "a b"),
            ("mail-type", "END\n#SBATCH --x"),
        ],
    )
    def test_job_options_are_checked(self, sched: SlurmScheduler, key: str, value: str) -> None:
        with pytest.raises(ValueError, match=f"^run option {key}="):
            sched.submit_dryrun(app_of(role()), {key: value})


def test_a_command_that_exits_before_reading_its_input_reports_its_status() -> None:
    """sbatch refusing a broken configuration exits before reading the batch script: that
    is its exit status and error, not a BrokenPipeError (which the CLI would take for a
    closed stdout and exit 0 in silence)."""
    from torchx.schedulers._slurm.commands import run_once

    code, out, err = run_once(
        ["sh", "-c", "echo refused >&2; exit 3"], stdin=b"#!/bin/bash\n" * 200_000
    )
    assert (code, out, err) == (3, "", "refused\n")


def test_a_job_dir_under_the_home_is_expanded_as_a_shell_would(
    sched: SlurmScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``job_dir=~/runs/x`` (a shell expanded it on upstream's command line): the copy of
    the workspace, the role's image and the batch script all name the same directory
    under the home, and no directory named ``~`` is made here."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "train.py").write_text("print(1)\n")
    role = Role(name="r", image="/tmp", entrypoint="python", args=["train.py"])
    role.workspace = Workspace.from_str(str(tmp_path / "project"))
    cfg = {"job_dir": "~/runs/x"}
    expected = str(tmp_path / "home" / "runs" / "x")
    assert sched.planned_image(role, cfg) == expected
    sched.build_workspace_and_update_role(role, str(tmp_path / "project"), cfg)
    assert role.image == expected and (Path(expected) / "train.py").is_file()
    assert not (tmp_path / "~").exists()
    script = sched.submit_dryrun(AppDef("a", [role]), cfg).request.materialize()
    assert f"--output={expected}/slurm-%j.out" in script


def test_torchrun_ignores_the_warning_signal_only_where_one_is_configured(
    sched: SlurmScheduler, tmp_path: Path
) -> None:
    """dist.ddp's command is upstream's (``torchrun ...``, the one on the PATH); with a
    warning signal for the steps, the launcher starts with it ignored (a trainer that
    saves on it installs its own handler); any other command, or a warning of the batch
    shell only, is left as it is."""
    from torchx.schedulers._slurm.request import launcher_ignores_warning

    ddp = ["-c", "torchrun --nnodes 1 train.py"]
    assert launcher_ignores_warning("bash", ddp, None) == ("bash", ddp)
    assert launcher_ignores_warning("bash", ddp, "USR1@55") == (
        "bash", ["-c", "trap '' USR1; torchrun --nnodes 1 train.py"],
    )  # fmt: skip
    assert launcher_ignores_warning("bash", ddp, "B:USR1@55") == ("bash", ddp)
    wrapped = ["-c", "trap '' 10; exec \"$@\"", "torchx-launcher", "/usr/bin/torchrun"]
    assert launcher_ignores_warning("/usr/bin/torchrun", ["train.py"], "10@30") == (
        "/bin/sh", [*wrapped, "train.py"],
    )  # fmt: skip
    plain = ["-c", "python train.py"]
    assert launcher_ignores_warning("bash", plain, "USR1@55") == ("bash", plain)
    (tmp_path / "train.py").write_text("print(1)\n")
    role = Role(  # as dist.ddp makes it
        name="train", image=str(tmp_path), entrypoint="bash",
        args=["-c", "torchrun --rdzv_backend c10d --nnodes 1 train.py"],
    )  # fmt: skip
    app = AppDef("ddp", [role])
    script = sched.submit_dryrun(app, {"signal": "USR1@55", "time": "5"}).request.materialize()
    assert "bash -c 'trap '\"'\"''\"'\"' USR1; torchrun --rdzv_backend c10d" in script
    unwarned = sched.submit_dryrun(app, {}).request.materialize()
    assert "bash -c 'torchrun --rdzv_backend c10d" in unwarned
