"""Built-in components: the AppDefs and command lines they produce, and their errors."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import torchx
from torchx.components import dist, utils
from torchx.components.structured_arg import StructuredJArgument, StructuredNameArgument
from torchx.specs import BindMount, Resource, macros
from torchx.specs.builders import materialize_appdef
from torchx.specs.file_linter import get_fn_docstring
from torchx.specs.finder import get_components

BUILTINS = [
    "dist.ddp",
    "dist.spmd",
    "dist.torchrun",
    "utils.binary",
    "utils.booth",
    "utils.copy",
    "utils.echo",
    "utils.hydra",
    "utils.python",
    "utils.sh",
    "utils.touch",
]
MULTI_NODE_ENDPOINT = "$${${rank0_env}:=localhost}:29500"


def test_exactly_the_eleven_builtins_are_discovered() -> None:
    assert sorted(get_components()) == BUILTINS


@pytest.mark.parametrize("name", BUILTINS)
def test_every_parameter_is_documented(name: str) -> None:
    fn = get_components()[name].fn
    description, params = get_fn_docstring(fn)
    assert "TIP" not in description
    signature = inspect.signature(fn)
    assert list(params) == list(signature.parameters)
    assert all(text.strip() for text in params.values()), params


def test_default_image_is_the_torchx_image() -> None:
    assert inspect.signature(utils.echo).parameters["image"].default == torchx.IMAGE
    assert utils.echo().roles[0].image == torchx.IMAGE


class TestDdp:
    @pytest.mark.parametrize(
        ("j", "expected", "replicas"),
        [
            (
                "2x4",
                f"torchrun --rdzv_backend c10d --rdzv_endpoint {MULTI_NODE_ENDPOINT}"
                " --rdzv_id '${app_id}' --nnodes 2 --nproc_per_node 4 --tee 3 --role ''"
                " train.py --foo bar",
                (2, 2),
            ),
            (
                "1:2x8",
                f"torchrun --rdzv_backend c10d --rdzv_endpoint {MULTI_NODE_ENDPOINT}"
                " --rdzv_id '${app_id}' --nnodes 1:2 --nproc_per_node 8 --tee 3 --role ''"
                " train.py --foo bar",
                (1, 2),
            ),
            (
                "4",
                "torchrun --rdzv_backend c10d --rdzv_endpoint localhost:0"
                " --rdzv_id '${app_id}' --nnodes 1 --nproc_per_node 4 --tee 3 --role ''"
                " train.py --foo bar",
                (1, 1),
            ),
            (
                "1x2",
                "torchrun --rdzv_backend c10d --rdzv_endpoint localhost:0"
                " --rdzv_id '${app_id}' --nnodes 1 --nproc_per_node 2 --tee 3 --role ''"
                " train.py --foo bar",
                (1, 1),
            ),
        ],
    )
    def test_command_lines(self, j: str, expected: str, replicas: tuple[int, int]) -> None:
        app = dist.ddp("--foo", "bar", script="train.py", j=j)
        role = app.roles[0]
        assert role.entrypoint == "bash"
        assert role.args == ["-c", expected]  # upstream's command: the torchrun on the PATH
        assert (role.min_replicas, role.num_replicas) == replicas

    def test_app_shape(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("LOGLEVEL", raising=False)
        app = dist.ddp(script="path/to/train.py", name="exp/run1", metadata={"team": "x"})
        role = app.roles[0]
        assert app.name == "run1"
        assert app.metadata == {"team": "x"}
        assert role.name == "train"
        assert role.image == torchx.IMAGE
        assert role.resource == Resource(cpu=2, gpu=0, memMB=1024)
        assert role.port_map == {"c10d": 29500}
        assert role.max_retries == 0
        assert role.env == {
            "TORCHX_TRACKING_EXPERIMENT_NAME": "exp",
            "TORCHX_TRACKING_RUN_NAME": "run1",
            "LOGLEVEL": "WARNING",
        }

    def test_module_static_backend_conf_and_port(self) -> None:
        app = dist.ddp(
            "a b",
            m="pkg.trainer",
            j="2x1",
            rdzv_backend="static",
            rdzv_conf="timeout=600",
            rdzv_port=1234,
            tee=1,
        )
        assert app.name == "trainer" and app.roles[0].name == "trainer"
        assert app.roles[0].args[1] == (
            "torchrun --rdzv_backend static --rdzv_conf timeout=600 --rdzv_endpoint"
            " $${${rank0_env}:=localhost}:1234 --rdzv_id '${app_id}' --nnodes 2"
            " --nproc_per_node 1 --tee 1 --role '' --node_rank '${replica_id}'"
            " -m pkg.trainer 'a b'"
        )
        assert app.roles[0].port_map == {"c10d": 1234}

    def test_macros_expand_to_a_shell_default(self) -> None:
        role = dist.ddp(script="t.py", j="2x1").roles[0]
        values = macros.Values(
            img_root="/img", app_id="t-123", replica_id="1", rank0_env="TORCHX_RANK0_HOST"
        )
        assert values.apply(role).args[1] == (
            "torchrun --rdzv_backend c10d --rdzv_endpoint ${TORCHX_RANK0_HOST:=localhost}:29500"
            " --rdzv_id 't-123' --nnodes 2 --nproc_per_node 1 --tee 3 --role '' t.py"
        )

    def test_env_debug_resources_mounts(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("LOGLEVEL", "INFO")
        env = {"A": "1"}
        app = dist.ddp(
            script="t.py",
            env=env,
            debug=True,
            h="gpu.small",
            cpu=99,
            max_retries=3,
            mounts=["type=bind", "src=/data", "dst=/mnt/data", "readonly"],
        )
        role = app.roles[0]
        assert env == {"A": "1"}  # the caller's dict is not modified
        assert role.env["A"] == "1"
        assert role.env["LOGLEVEL"] == "INFO"
        assert role.env["TORCH_DISTRIBUTED_DEBUG"] == "DETAIL"
        assert role.env["CUDA_LAUNCH_BLOCKING"] == "1"
        assert (role.resource.cpu, role.resource.gpu) == (8, 1)  # h wins over cpu
        assert role.max_retries == 3
        assert role.mounts == [BindMount("/data", "/mnt/data", read_only=True)]

    def test_errors(self) -> None:
        with pytest.raises(ValueError, match="exactly one of --script and -m"):
            dist.ddp()
        with pytest.raises(ValueError, match="exactly one of --script and -m"):
            dist.ddp(script="a.py", m="a")
        for bad in ["x4", "2x", "1:2", "a", "2x4x1", ""]:
            with pytest.raises(ValueError, match="Invalid format for -j"):
                dist.ddp(script="a.py", j=bad)

    def test_parse_nnodes(self) -> None:
        assert dist.parse_nnodes("2:4x1") == (2, 4, 1, "2:4")
        assert dist.parse_nnodes("3x8") == (3, 3, 8, "3")
        assert dist.parse_nnodes("8") == (1, 1, 8, "1")
        with pytest.raises(ValueError, match="at least 3 nodes but at most 1"):
            dist.parse_nnodes("3:1x2")
        with pytest.raises(ValueError, match="at least 1"):
            dist.parse_nnodes("0x2")


class TestSpmd:
    def test_one_worker_per_gpu(self) -> None:
        app = dist.spmd(script="t.py", j="2", h="gpu.medium")
        role = app.roles[0]
        assert "--nnodes 2 --nproc_per_node 2" in role.args[1]
        assert (role.resource.cpu, role.resource.gpu) == (16, 2)

    def test_explicit_nproc_warns_on_mismatch(self) -> None:
        with pytest.warns(UserWarning, match="has 1 GPUs"):
            app = dist.spmd(script="t.py", j="1x4")
        assert "--nproc_per_node 4" in app.roles[0].args[1]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            dist.spmd(script="t.py", j="1x1")

    def test_cpu_host_needs_nproc(self) -> None:
        with pytest.raises(ValueError, match="has no GPUs"):
            dist.spmd(script="t.py", j="2", h="cpu.small")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no GPUs: nothing to mismatch
            app = dist.spmd(m="m", j="1x3", h="cpu.small")
        assert "--nproc_per_node 3" in app.roles[0].args[1]


class TestStructuredArgs:
    @pytest.mark.parametrize(
        ("name", "m", "script", "expected"),
        [
            ("foo/bar", None, "bar/baz.py", ("foo", "bar")),
            ("foo/", None, "bar/baz.py", ("foo", "baz")),
            ("/bar", None, "bar/baz.py", ("default-experiment", "bar")),
            ("foobar", "foo.bar", None, ("default-experiment", "foobar")),
            ("/", "foo.bar.baz", None, ("default-experiment", "baz")),
            ("a/b/c", "m", None, ("a", "b/c")),
        ],
    )
    def test_name(
        self, name: str, m: str | None, script: str | None, expected: tuple[str, str]
    ) -> None:
        parsed = StructuredNameArgument.parse_from(name, m=m, script=script)
        assert (parsed.experiment_name, parsed.run_name) == expected
        assert str(parsed) == "/".join(expected)

    def test_name_needs_exactly_one_program(self) -> None:
        with pytest.raises(ValueError, match="no program given"):
            StructuredNameArgument.parse_from("a/b")
        with pytest.raises(ValueError, match="both a main module"):
            StructuredNameArgument.parse_from("a/b", m="x", script="y.py")

    def test_j(self) -> None:
        assert str(StructuredJArgument.parse_from("aws_p4d.24xlarge", "2")) == "2x8"
        with pytest.raises(ValueError, match="invalid -j"):
            StructuredJArgument.parse_from("gpu.small", "2xa")


class TestUtils:
    def test_echo_touch(self) -> None:
        echo = utils.echo(msg="hi there", num_replicas=3)
        assert echo.name == "echo"
        role = echo.roles[0]
        assert (role.entrypoint, role.args, role.num_replicas) == ("echo", ["hi there"], 3)
        assert role.resource == Resource(cpu=1, gpu=0, memMB=1024)
        touch = utils.touch("/tmp/f", image="img").roles[0]
        assert (touch.name, touch.entrypoint, touch.args, touch.image) == (
            "touch",
            "touch",
            ["/tmp/f"],
            "img",
        )

    def test_sh_quotes_every_argument(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("LOGLEVEL", raising=False)
        role = utils.sh("echo", "$HOME", "a b", "x;y", "it's").roles[0]
        assert role.entrypoint == "sh"
        assert role.args == ["-c", "exec echo '$HOME' 'a b' 'x;y' 'it'\"'\"'s'"]
        assert role.env == {"LOGLEVEL": "WARNING"}

    def test_sh_gives_a_signal_to_the_command_not_to_its_shell(self) -> None:
        """Slurm's time-limit warning reaches every process of the replica: a command that
        saves and exits 0 on it ends the replica with 0 (its shell no longer dies of it)."""
        import signal

        script = "trap 'echo saved; exit 0' USR1; echo ready; while :; do sleep 0.05; done"
        role = utils.sh("sh", "-c", script).roles[0]
        proc = subprocess.Popen(
            [role.entrypoint, *role.args], stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        os.killpg(proc.pid, signal.SIGUSR1)  # every process of the group, as slurmstepd does
        out, _ = proc.communicate(timeout=30)
        assert (proc.returncode, out) == (0, "saved\n")

    def test_sh_runs_shell_builtins_in_the_shell(self) -> None:
        role = utils.sh("exit", "3").roles[0]
        assert subprocess.run([role.entrypoint, *role.args]).returncode == 3

    def test_sh_prints_literal_text(self) -> None:
        role = utils.sh("echo", "$HOME", "a  b", "x;y").roles[0]
        out = subprocess.run([role.entrypoint, *role.args], capture_output=True, text=True)
        assert out.stdout == "$HOME a  b x;y\n"

    def test_sh_with_entrypoint_and_options(self) -> None:
        env = {"K": "v"}
        app = utils.sh(
            "-n",
            "a b",
            entrypoint="echo",
            env=env,
            h="cpu.medium",
            num_replicas=2,
            max_retries=1,
            mounts=["type=volume", "src=vol", "dst=/v"],
        )
        role = app.roles[0]
        assert (role.entrypoint, role.args) == ("echo", ["-n", "'a b'"])
        assert env == {"K": "v"}
        assert role.env["K"] == "v" and "LOGLEVEL" in role.env
        assert (role.resource.cpu, role.resource.memMB, role.num_replicas) == (2, 4096, 2)
        assert role.max_retries == 1 and role.mounts[0].dst_path == "/v"

    def test_python(self) -> None:
        m = utils.python("--lr", "1", m="my.main", name="job").roles[0]
        assert (m.entrypoint, m.args, m.env) == (
            "python",
            ["-m", "my.main", "--lr", "1"],
            {"HYDRA_MAIN_MODULE": "my.main"},
        )
        c = utils.python(c="print(1)").roles[0]
        assert (c.args, c.env) == (["-c", "print(1)"], {})
        s = utils.python("x", script="s.py", gpu=1).roles[0]
        assert s.args == ["s.py", "x"] and s.resource.gpu == 1
        assert utils.python(script="s.py").name == "torchx_utils_python"
        for kwargs in [{}, {"m": "a", "c": "b"}, {"m": "a", "script": "s.py"}]:
            with pytest.raises(ValueError, match="exactly one of `-m`, `-c` and `--script`"):
                utils.python(**kwargs)  # type: ignore[arg-type]

    def test_binary_copy_booth(self) -> None:
        binary = utils.binary("a", entrypoint="/bin/true", cpu=4)
        assert binary.name == "torchx_utils_binary"
        role = binary.roles[0]
        assert (role.name, role.image, role.entrypoint, role.args, role.resource.cpu) == (
            "binary",
            "<NONE>",
            "/bin/true",
            ["a"],
            4,
        )
        copy = utils.copy("s3://b/a", "/tmp/a", mounts=["type=bind", "src=/x", "dst=/y"])
        assert copy.name == "torchx-utils-copy"
        assert copy.roles[0].args == [
            "-m",
            "torchx.apps.utils.copy_main",
            "--src",
            "s3://b/a",
            "--dst",
            "/tmp/a",
        ]
        assert copy.roles[0].mounts == [BindMount("/x", "/y")]
        booth = utils.booth(1.5, 2, trial_idx=3, tracker_base="/base")
        assert booth.roles[0].args == [
            "-m",
            "torchx.apps.utils.booth_main",
            "--x1",
            "1.5",
            "--x2",
            "2",
            "--trial_idx",
            "3",
            "--tracker_base",
            "/base",
        ]

    def test_cli_style_arguments(self) -> None:
        app = materialize_appdef(
            utils.sh, ["--env", "A=1,B=2", "-h", "cpu.small", "--", "echo", "hi"]
        )
        role = app.roles[0]
        assert role.args == ["-c", "exec echo hi"]
        assert role.env["A"] == "1" and role.env["B"] == "2"
        assert role.resource.memMB == 2048


HYDRA_CONFIG = """\
app:
  _target_: torchx.specs.AppDef
  name: trainer
  roles:
    - _target_: torchx.specs.Role
      name: trainer
      image: my_image
      entrypoint: python
      num_replicas: 2
      args: [-m, my.trainer, "${torchx.app_id:}", "${torchx.replica_id:}",
             "${torchx.rank0_env:}", "${torchx.img_root:}"]
"""


class TestHydra:
    def test_builds_app_from_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        pytest.importorskip("hydra")
        (tmp_path / ".torchx").mkdir()
        (tmp_path / ".torchx" / "job.yaml").write_text(HYDRA_CONFIG)
        monkeypatch.chdir(tmp_path)
        app = materialize_appdef(utils.hydra, ["-cn", "job", "app.name=other"])
        assert app.name == "other"
        role = app.roles[0]
        assert role.num_replicas == 2
        assert role.args == [
            "-m",
            "my.trainer",
            "${app_id}",
            "${replica_id}",
            "${rank0_env}",
            "${img_root}",
        ]
        # a second call in the same process works (no global Hydra state left behind)
        again = utils.hydra(config_name="job", config_dir=str(tmp_path / ".torchx"))
        assert again.name == "trainer"

    def test_config_without_app_node(self, tmp_path: Path) -> None:
        pytest.importorskip("hydra")
        (tmp_path / "bad.yaml").write_text("role: {}\n")
        with pytest.raises(ValueError, match="has no `app` node"):
            utils.hydra(config_name="bad", config_dir=str(tmp_path))

    def test_missing_hydra_is_a_clear_error(self) -> None:
        code = textwrap.dedent(
            """
            import sys
            sys.modules["hydra"] = None  # as if hydra-core were not installed
            from torchx.components.utils import hydra
            try:
                hydra(config_name="x")
            except ImportError as e:
                print(e)
            """
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
        ).stdout
        assert "utils.hydra needs hydra-core" in out
        assert "pip install 'torchx-runner[hydra]'" in out


def test_torchrun_is_ddp_with_a_bare_j_counting_nodes_of_a_named_host() -> None:
    """``dist.torchrun`` (upstream's head): ``-j 2 -h aws_p4d.24xlarge`` is 2 nodes of 8
    workers; without ``-h`` a bare ``-j 3`` is 3 workers on one node, as ``dist.ddp``."""
    app = dist.torchrun(script="train.py", h="aws_p4d.24xlarge", j="2")
    role = app.roles[0]
    assert role.num_replicas == 2 and "--nnodes 2 --nproc_per_node 8" in role.args[1]
    single = dist.torchrun(script="train.py", j="3").roles[0]
    assert single.num_replicas == 1 and "--nproc_per_node 3" in single.args[1]
    assert dist.ddp(script="train.py", h="aws_p4d.24xlarge", j="2").roles[0].num_replicas == 1
    explicit = dist.torchrun(script="train.py", j="2x4").roles[0]
    assert explicit.args == dist.ddp(script="train.py", j="2x4").roles[0].args
