"""Plugins from a test distribution: custom subcommands and components, `torchx plugins`,
and `torchx builtins` (with and without custom components)."""

from __future__ import annotations

import json
import re

import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli, OneLineError


CLI_MODULE = """
import argparse

from torchx.cli.cmd_base import SubCommand


class CmdHello(SubCommand):
    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("--name", default="world")

    def run(self, args: argparse.Namespace) -> None:
        print(f"hello {args.name}")


def make_cmd():
    return CmdHello()


class CmdCrash(SubCommand):
    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> None:
        raise RuntimeError("boom in plugin")


class CmdMyStatus(SubCommand):
    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("app_handle")

    def run(self, args: argparse.Namespace) -> None:
        print(f"custom status of {args.app_handle}")
"""

TRAINER_MODULE = '''
import torchx.specs as specs


def train(msg: str = "training") -> specs.AppDef:
    """Prints a message like a trainer would.

    Args:
        msg: what to print
    """
    return specs.AppDef(
        name="train",
        roles=[
            specs.Role(
                name="trainer",
                image="",
                entrypoint="echo",
                args=[msg],
                resource=specs.resource(cpu=1),
            )
        ],
    )
'''

RESOURCES_MODULE = """
from torchx.specs import Resource



def gpu_x2():
    return Resource(cpu=16, gpu=2, memMB=122_000)


def bad():
    raise RuntimeError("no such hardware")
"""


def _install(cli: Cli, keep_builtin_components: bool) -> None:
    components = {"foo": "mytest_components"}
    if keep_builtin_components:
        components["_"] = "torchx.components"
    cli.add_distribution(
        "mytest",
        "1.0",
        {
            "torchx.cli.cmds": {
                "hello": "mytest_cli:CmdHello",
                "hello_factory": "mytest_cli:make_cmd",
                "status": "mytest_cli:CmdMyStatus",
                "badcmd": "mytest_missing_module:Cmd",
                "crash": "mytest_cli:CmdCrash",
            },
            "torchx.components": components,
            "torchx.named_resources": {
                "gpu_x2": "mytest_resources:gpu_x2",
                "badres": "mytest_resources:bad",
            },
            "torchx.schedulers": {"broken": "mytest_no_such_scheduler:create_scheduler"},
        },
        {
            "mytest_cli.py": CLI_MODULE,
            "mytest_components/__init__.py": "",
            "mytest_components/trainer.py": TRAINER_MODULE,
            "mytest_resources.py": RESOURCES_MODULE,
        },
    )


@pytest.fixture
def plugged(cli: Cli) -> Cli:
    _install(cli, keep_builtin_components=False)
    return cli


@pytest.fixture
def plugged_keeping_builtins(cli: Cli) -> Cli:
    _install(cli, keep_builtin_components=True)
    return cli


def _builtin_names(stdout: str) -> list[str]:
    first, *rest = stdout.splitlines()
    found = re.match(r"Found (\d+) builtin components:", first)
    assert found, first
    names = []
    for line in rest:
        listed = re.match(r"^ +\d+\. (\S+)(?:  +\S.*)?$", line)  # name, then its purpose
        assert listed, line
        names.append(listed.group(1))
    count = int(found.group(1))
    assert len(names) == count
    return names


def test_builtins_lists_the_builtin_components(cli: Cli) -> None:
    proc = cli.run("builtins")
    assert proc.returncode == 0, proc.stderr
    names = _builtin_names(proc.stdout)
    assert {"dist.ddp", "utils.echo", "utils.sh", "utils.python"} <= set(names)


def test_builtins_to_a_pipe_prints_upstreams_lines(cli: Cli) -> None:
    """Scripts parse ``torchx builtins | grep``: a numbered name per line, as upstream
    prints it; the purposes come on a terminal or with ``--purposes``."""
    lines = cli.run("builtins").stdout.splitlines()
    assert re.fullmatch(r"Found \d+ builtin components:", lines[0]), lines[0]
    assert all(re.fullmatch(r" *\d+\. [\w.]+", line) for line in lines[1:]), lines
    assert "  1. " + lines[1].split(". ", 1)[1] == lines[1]  # `  1. dist.ddp`
    assert any(line.endswith(". dist.ddp") for line in lines)
    described = cli.run("builtins", "--purposes").stdout.splitlines()
    ddp = next(line for line in described if ". dist.ddp " in line)
    assert len(ddp.split()) > 2, ddp  # a purpose beside the name


def test_builtins_print_source(cli: Cli, one_line_error: OneLineError) -> None:
    proc = cli.run("builtins", "--print", "utils.echo")
    assert proc.returncode == 0, proc.stderr
    assert "def echo(" in proc.stdout
    missing = cli.run("builtins", "--print", "utils.nope")
    assert missing.returncode == 1
    assert "utils.nope" in one_line_error(missing)


def test_custom_subcommands(plugged: Cli, one_line_error: OneLineError) -> None:
    cli = plugged
    assert cli.run("hello", "--name", "plugin").stdout == "hello plugin\n"
    assert cli.run("hello_factory").stdout == "hello world\n"

    overridden = cli.run("status", "local_cwd://torchx/x")
    assert overridden.returncode == 0, overridden.stderr
    assert overridden.stdout == "custom status of local_cwd://torchx/x\n"

    helped = cli.run("--help")
    assert helped.returncode == 0
    assert re.search(r"\n  hello +\(from mytest 1\.0\)\n", helped.stdout)
    assert re.search(r"\n  status +show the status of an app \(replaced by mytest", helped.stdout)

    broken = cli.run("badcmd")
    assert broken.returncode == 1
    line = one_line_error(broken)
    assert "subcommand `badcmd` from mytest failed to load" in line
    assert "mytest_missing_module" in line


def test_unexpected_exception_is_one_line_with_a_hint(plugged: Cli) -> None:
    proc = plugged.run("crash")
    assert proc.returncode == 1
    assert proc.stderr == (
        "torchx: error: RuntimeError: boom in plugin"
        " (rerun with `torchx --log_level debug ...` for the traceback)\n"
    )
    debug = plugged.run("--log_level", "DEBUG", "crash")
    assert "Traceback (most recent call last)" in debug.stderr
    assert 'raise RuntimeError("boom in plugin")' in debug.stderr


def test_custom_components_replace_the_builtins(plugged: Cli) -> None:
    cli = plugged
    assert _builtin_names(cli.run("builtins").stdout) == ["foo.trainer.train"]
    run = cli.run("run", "-s", "local_cwd", "foo.trainer.train", "--msg", "custom")
    assert run.returncode == 0, run.stderr
    assert "trainer/0 custom" in run.stderr
    builtin = cli.run("run", "-s", "local_cwd", "utils.echo")
    assert builtin.returncode == 1


def test_underscore_entry_keeps_the_builtins(plugged_keeping_builtins: Cli) -> None:
    cli = plugged_keeping_builtins
    names = _builtin_names(cli.run("builtins").stdout)
    assert "foo.trainer.train" in names
    assert {"dist.ddp", "utils.echo"} <= set(names)
    run = cli.run("run", "-s", "local_cwd", "utils.echo", "--msg", "still here")
    assert run.returncode == 0, run.stderr


def test_plugins_report(plugged: Cli) -> None:
    cli = plugged
    proc = cli.run("plugins")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert re.search(r"^mytest +1\.0$", text, re.M)
    assert re.search(r"^torchx-cli +\S+$", text, re.M)
    assert re.search(
        r"^local_cwd +torchx-runner \S+ +torchx\.schedulers\.local_scheduler:", text, re.M
    )
    assert re.search(r"^broken +mytest 1\.0 .*FAILED", text, re.M)
    assert re.search(r"^hello +mytest 1\.0 +mytest_cli:CmdHello +ok$", text, re.M)
    assert re.search(r"^status +torchx-cli \S+ .*replaced by mytest$", text, re.M)
    assert re.search(r"^gpu_x2 +mytest 1\.0 +mytest_resources:gpu_x2 +ok$", text, re.M)
    failed = text.split("failed to load (", 1)[1]
    assert "schedulers `broken` (mytest): ModuleNotFoundError" in failed
    assert "subcommands `badcmd` (mytest): ModuleNotFoundError" in failed
    assert "named_resources `badres` (mytest): RuntimeError: no such hardware" in failed


def test_plugins_json(plugged: Cli) -> None:
    proc = plugged.run("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {"name": "mytest", "version": "1.0"} in report["distributions"]
    schedulers = {s["name"]: s for s in report["schedulers"]}
    assert schedulers["local_cwd"]["error"] is None
    assert schedulers["local_cwd"]["dist"] == "torchx-runner"
    assert schedulers["broken"]["error"].startswith("ModuleNotFoundError")
    assert {c["name"] for c in report["components"]} == {"foo"}
    assert {t["name"] for t in report["trackers"]} >= {"fsspec"}
    resources = {r["name"]: r for r in report["named_resources"]}
    assert resources["gpu.small"]["dist"] == "torchx-specs"
    assert resources["gpu_x2"]["error"] is None
    errors = {(e["kind"], e["name"]) for e in report["errors"]}
    assert errors == {
        ("schedulers", "broken"),
        ("subcommands", "badcmd"),
        ("named_resources", "badres"),
    }


def test_plugins_without_extra_distributions(cli: Cli) -> None:
    proc = cli.run("plugins")
    assert proc.returncode == 0, proc.stderr
    assert "failed to load: none" in proc.stdout
    report = json.loads(cli.run("plugins", "--json").stdout)
    assert report["components"][0]["target"] == "torchx.components"
    assert report["components"][0]["builtin"] is True
    assert report["errors"] == []


def test_builtins_listing_follows_component_source_changes(plugged: Cli) -> None:
    cli = plugged
    package = next(p for p in cli.pythonpath if p.endswith("site-mytest")) + "/mytest_components"
    assert _builtin_names(cli.run("builtins").stdout) == ["foo.trainer.train"]
    assert _builtin_names(cli.run("builtins").stdout) == ["foo.trainer.train"]  # cached

    with open(f"{package}/evaluator.py", "w") as f:  # a new module
        f.write(TRAINER_MODULE.replace("def train(", "def evaluate("))
    assert sorted(_builtin_names(cli.run("builtins").stdout)) == [
        "foo.evaluator.evaluate",
        "foo.trainer.train",
    ]

    with open(f"{package}/trainer.py", "a") as f:  # a new function in an existing module
        f.write(
            TRAINER_MODULE.replace("import torchx.specs as specs", "").replace("train(", "tune(")
        )
    assert "foo.trainer.tune" in _builtin_names(cli.run("builtins").stdout)

    uncached = cli.run("builtins", env={"TORCHX_NO_ENTRYPOINT_CACHE": "1"})
    assert sorted(_builtin_names(uncached.stdout)) == [
        "foo.evaluator.evaluate",
        "foo.trainer.train",
        "foo.trainer.tune",
    ]


def test_builtins_reports_a_component_module_that_fails_to_import(cli: Cli) -> None:
    cli.add_distribution(
        "brokencomps",
        "0.1",
        {"torchx.components": {"_": "torchx.components", "bad": "brokencomps"}},
        {
            "brokencomps/__init__.py": "",
            "brokencomps/oops.py": "import a_module_that_is_not_installed\n",
        },
    )
    for _ in range(2):  # never cached: the warning shows every time
        proc = cli.run("builtins")
        assert proc.returncode == 0, proc.stderr
        assert "utils.echo" in _builtin_names(proc.stdout)
        assert "torchx: warning: components of brokencomps.oops" in proc.stderr
        assert "a_module_that_is_not_installed" in proc.stderr
    report = json.loads(cli.run("plugins", "--json").stdout)
    assert [(e["kind"], e["name"]) for e in report["errors"]] == [
        ("component modules", "brokencomps.oops")
    ]
    assert "utils.echo" in report["component_names"]


OLD_CONTRACT_SCHEDULER = """
TORCHX_PLUGIN_API = 0  # built for a contract this torchx-specs no longer offers


def create_scheduler(session_name, **kwargs):
    raise AssertionError("an incompatible plugin must not be called")
"""


def test_a_plugin_built_for_another_contract_is_one_line(
    cli: Cli, one_line_error: OneLineError
) -> None:
    """It names the plugin, its version and what to install; the other plugins still load."""
    cli.add_distribution(
        "torchx-sched-oldthing",
        "0.3.1",
        {"torchx.schedulers": {"oldthing": "oldthing_sched:create_scheduler"}},
        {"oldthing_sched.py": OLD_CONTRACT_SCHEDULER},
    )
    listed = cli.run("runopts")
    assert listed.returncode == 0, listed.stderr
    assert "local_cwd:" in listed.stdout and "Traceback" not in listed.stderr + listed.stdout
    (failed,) = [line for line in listed.stdout.splitlines() if "failed to load" in line]
    assert "plugin `torchx.schedulers:oldthing` (torchx-sched-oldthing 0.3.1)" in failed
    assert "built for torchx plugin API 0" in failed
    assert "pip install -U torchx-sched-oldthing" in failed
    run = cli.run("run", "-s", "oldthing", "utils.echo")
    assert "was built for torchx plugin API 0" in one_line_error(run)
    assert cli.run("run", "-s", "local_cwd", "utils.echo").returncode == 0


NAMESPACE_SCHEDULER = """
from torchx.plugins import register


@register.scheduler()
def acme(session_name, **kwargs):
    from torchx.schedulers.local_scheduler import create_scheduler

    return create_scheduler(session_name, **kwargs)
"""

NAMESPACE_RESOURCES = """
from torchx.plugins import WHOLE, powers_of_two_gpus, register
from torchx.specs import Resource


@register.named_resource(fractionals=powers_of_two_gpus)
def acme_gpu(fractional: float = WHOLE) -> Resource:
    return Resource(
        cpu=int(32 * fractional), gpu=int(4 * fractional), memMB=int(65536 * fractional)
    )
"""


def test_namespace_package_plugins_run_and_are_listed(cli: Cli) -> None:
    """A distribution that ships only ``torchx_plugins.*`` modules (no entry points) adds a
    scheduler that runs jobs, shows in runopts and plugins, and adds named resources."""
    cli.add_distribution(
        "acme-torchx-plugins",
        "1.0",
        {},
        {
            "torchx_plugins/schedulers/acme.py": NAMESPACE_SCHEDULER,
            "torchx_plugins/named_resources/acme.py": NAMESPACE_RESOURCES,
            "torchx_plugins/named_resources/needs_sdk.py": "import acme_sdk_not_installed\n",
        },
    )
    ran = cli.run("run", "-s", "acme", "--wait", "--log", "utils.echo", "--msg", "hi-from-acme")
    assert ran.returncode == 0, ran.stderr
    assert "hi-from-acme" in ran.stdout + ran.stderr
    assert "SUCCEEDED" in ran.stdout + ran.stderr
    opts = cli.run("runopts", "acme")
    assert opts.returncode == 0 and "acme:" in opts.stdout and "log_dir" in opts.stdout
    dry = cli.run(
        "run", "--dryrun", "-s", "acme", "dist.ddp", "-j", "1x1", "-h", "acme_gpu_2",
        "--script", "train.py",
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert '"gpu": 2' in dry.stdout and '"acme_gpu_2"' in dry.stdout
    report = json.loads(cli.run("plugins", "--json").stdout)
    scheds = {e["name"]: e for e in report["schedulers"]}
    assert scheds["acme"]["group"] == "torchx_plugins.schedulers"
    assert scheds["acme"]["target"] == "torchx_plugins.schedulers.acme:acme"
    assert "local_cwd" in scheds
    resources = {e["name"] for e in report["named_resources"]}
    assert {"acme_gpu", "acme_gpu_4", "acme_gpu_2", "acme_gpu_1"} <= resources
    (failed,) = report["errors"]
    assert failed["target"] == "torchx_plugins.named_resources.needs_sdk"
    assert "acme_sdk_not_installed" in failed["error"]
    text = cli.run("plugins").stdout
    assert "torchx_plugins.schedulers" in text
    assert "torchx_plugins.named_resources.needs_sdk" in text.split("failed to load")[1]


UPSTREAM_STYLE_SCHEDULER = """
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.specs import AppState, runopts
from torchx.util.shlex import quote


class LsfLike(Scheduler):
    '''Written as upstream's LSF scheduler and NeMo-Run's slurm_tunnel are: ``list(self)``
    takes no run options, and ``torchx.util.shlex.quote`` builds its commands.'''

    def __init__(self, session_name: str, **kwargs: object) -> None:
        super().__init__("lsflike", session_name)

    def _run_opts(self) -> runopts:
        opts = runopts()
        opts.add("queue", type_=str, default="normal", help="the queue")
        return opts

    def schedule(self, dryrun_info):
        return "job-1"

    def _submit_dryrun(self, app, cfg):
        raise NotImplementedError

    def describe(self, app_id):
        return DescribeAppResponse(app_id=app_id, state=AppState.RUNNING)

    def _cancel_existing(self, app_id):
        pass

    def log_iter(self, *args, **kwargs):
        return iter(())

    def list(self):
        return [ListAppResponse(app_id=quote("job 1"), state=AppState.RUNNING)]


def create_scheduler(session_name: str, **kwargs: object) -> LsfLike:
    return LsfLike(session_name)
"""


def test_a_scheduler_plugin_whose_list_takes_no_cfg_lists(cli: Cli) -> None:
    cli.add_distribution(
        "lsf-like-plugin", "1.0",
        {"torchx.schedulers": {"lsflike": "lsf_like:create_scheduler"}},
        {"lsf_like.py": UPSTREAM_STYLE_SCHEDULER},
    )  # fmt: skip
    listed = cli.run("list", "-s", "lsflike")
    assert listed.returncode == 0, listed.stderr
    assert "lsflike://torchx/'job 1'" in listed.stdout, listed.stdout
    as_json = cli.run("list", "-s", "lsflike", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert [a["app_id"] for a in json.loads(as_json.stdout)] == ["'job 1'"]
    (cli.cwd / ".torchxconfig").write_text("[lsflike]\nqueue = night\n")
    assert cli.run("list", "-s", "lsflike").returncode == 0  # options it cannot take
