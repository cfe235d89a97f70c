"""The ``ssh`` run option without a login node: targets, the remote command line, the ssh
command, what ssh's failures say, and the request of a job submitted through a login node.

Jobs submitted through a real OpenSSH server to the real cluster are in tests/slurm.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from torchx.schedulers._slurm.ssh import (
    SshTarget,
    control_dir,
    remote_command,
    split_app_id,
    ssh_argv,
    ssh_error,
)
from torchx.schedulers.slurm_scheduler import SlurmScheduler, create_scheduler
from torchx.specs import AppDef, Role, parse_app_handle


@pytest.fixture
def sched() -> SlurmScheduler:
    return create_scheduler("test")


@pytest.mark.parametrize(
    "text, destination, port",
    [
        ("login1", "login1", None),
        ("alice@login1.example.org", "alice@login1.example.org", None),
        ("alice@login1:2222", "alice@login1", 2222),
        ("[::1]:22", "::1", 22),
        ("bob@[fe80::1]", "bob@fe80::1", None),
        ("my-cluster", "my-cluster", None),
    ],
)
def test_targets_read_back_from_their_spec(text: str, destination: str, port: int | None) -> None:
    target = SshTarget.parse(text)
    assert (target.destination, target.port) == (destination, port)
    assert SshTarget.parse(target.spec) == target


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "an empty host"),
        ("-oProxyCommand=touch /tmp/x", "starting with '-'"),
        ("login 1", "a character ssh destinations do not have"),
        ("login;id", "a character ssh destinations do not have"),
        ("a@b@c", "more than one '@'"),
        ("login:99999", "port '99999'"),
        ("login:ssh", "port 'ssh'"),
    ],
)
def test_bad_targets_are_one_line(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as info:
        SshTarget.parse(text)
    assert "\n" not in str(info.value)


def test_handles_name_the_login_node_in_a_form_upstream_parses() -> None:
    handle = "slurm://torchx/1234@alice@login1:2222"
    parsed = parse_app_handle(handle)
    assert (parsed.scheduler_backend, parsed.session_name) == ("slurm", "torchx")
    job_id, target = split_app_id(parsed.app_id)
    assert job_id == "1234" and target == SshTarget("alice@login1", 2222)
    assert split_app_id("1234") == ("1234", None)


LOGIN_SHELLS = ["sh", "bash", "dash", "zsh", "fish", "tcsh", "csh"]


@pytest.mark.parametrize("shell", LOGIN_SHELLS)
def test_the_remote_command_line_reaches_the_program_word_for_word(shell: str) -> None:
    """ssh hands the line to the account's login shell, whichever it is: the same words
    reach the program under every shell a login node may give its users."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here (tools/sshd-up.sh installs the others)")
    words = ["printf", "%s|", "two words", "it's", "$(id)", "`id`", "a;b", "", "ü"]
    words += ["back\\slash", "\\'", "bang!x", "line\nbreak\n", "$HOME", "%d", "{a,b}", "~"]
    line = remote_command(words, {"SLURM_UMASK": "0077"})
    # what the login shell parses holds none of the user's quotes, `!` or line breaks
    assert "\n" not in line and "!" not in line and line.count("'") == 2
    out = subprocess.run([shell, "-c", line], capture_output=True, text=True, check=True)
    assert out.stdout == "|".join(words[2:]) + "|", out.stderr


def test_the_ssh_command_never_prompts_and_shares_one_connection() -> None:
    argv = ssh_argv(SshTarget("alice@login1", 2222), "squeue -j 1")
    assert argv[0] == "ssh" and argv[-3:] == ["--", "alice@login1", "squeue -j 1"]
    options = [argv[i + 1] for i, word in enumerate(argv) if word == "-o"]
    assert "BatchMode=yes" in options and "ControlMaster=auto" in options
    assert any(o.startswith("ControlPersist=") for o in options)
    (path,) = [o.split("=", 1)[1] for o in options if o.startswith("ControlPath=")]
    assert path == f"{control_dir()}/%C" and len(path) < 80  # a socket path must be short
    assert argv[argv.index("-p") + 1] == "2222"


def test_the_connection_directory_must_be_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    made = control_dir()
    assert made == str(tmp_path / f"torchx-ssh-{os.getuid()}")
    assert os.stat(made).st_mode & 0o777 == 0o700
    os.chmod(made, 0o777)  # another user could plant a socket there: not used
    assert control_dir() is None
    argv = ssh_argv(SshTarget("login1"), "true")
    assert not any(word.startswith("ControlPath") for word in argv)


@pytest.mark.parametrize(
    "stderr, says",
    [
        ("alice@login1: Permission denied (publickey,password).", "was refused"),
        ("Host key verification failed.", "does not know the host key of login1"),
        ("ssh: Could not resolve hostname login1: Name or service not known", "cannot resolve"),
        ("ssh: connect to host login1 port 22: Connection refused", "cannot reach login1"),
        ("ssh: connect to host login1 port 22: Connection timed out", "cannot reach login1"),
        ("kex_exchange_identification: something new", "ssh to login1 failed"),
    ],
)
def test_ssh_failures_say_what_to_fix(stderr: str, says: str) -> None:
    message = str(ssh_error(SshTarget("alice@login1"), stderr))
    assert says in message and "\n" not in message
    assert stderr.strip() in message  # ssh's own words are kept


def _role() -> Role:
    return Role(name="trainer", image="/shared/env", entrypoint="python3", args=["train.py"])


class TestRequest:
    def test_logs_are_relative_to_the_job_dir_on_the_cluster(self, sched: SlurmScheduler) -> None:
        cfg = {"ssh": "alice@login1:2222", "job_dir": "~/runs/r1"}
        req = sched.submit_dryrun(AppDef("app", [_role()]), cfg).request
        assert req.via is not None and req.via.spec == "alice@login1:2222"
        assert req.job_dir == "runs/r1"
        script = req.materialize()
        assert "--output=slurm-%j.out" in script
        assert 'srun --output=slurm-"$SLURM_JOB_ID"-trainer-0.out' in script

    def test_nothing_is_looked_for_on_this_host(
        self, sched: SlurmScheduler, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        os.symlink("/usr/bin/ssh", tmp_path / "ssh")
        monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here, nor python3
        from torchx.util.support.host_checks import real_submit

        with real_submit():
            req = sched.submit_dryrun(AppDef("app", [_role()]), {"ssh": "login1"}).request
        assert req.replicas["trainer-0"].entrypoint == "python3"

    def test_a_missing_ssh_client_refuses_a_real_submission(
        self, sched: SlurmScheduler, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.setenv("PATH", str(tmp_path))
        from torchx.util.support.host_checks import real_submit

        with real_submit(), pytest.raises(FileNotFoundError, match="needs OpenSSH's ssh client"):
            sched.submit_dryrun(AppDef("app", [_role()]), {"ssh": "login1"})

    def test_containers_made_here_are_refused(self, sched: SlurmScheduler) -> None:
        with pytest.raises(ValueError, match="container=oci unpacks the image on the submitting"):
            sched.submit_dryrun(AppDef("app", [_role()]), {"ssh": "login1", "container": "oci"})
        with pytest.raises(ValueError, match="give -cfg job_dir=ABSOLUTE_PATH on the cluster"):
            sched.submit_dryrun(AppDef("app", [_role()]), {"ssh": "login1", "container": "pyxis"})
        cfg = {"ssh": "login1", "container": "pyxis", "job_dir": "/scratch/alice/r1"}
        req = sched.submit_dryrun(AppDef("app", [_role()]), cfg).request
        opts = req.replicas["trainer-0"].srun_opts
        assert opts["container-workdir"] == "/scratch/alice/r1"

    def test_a_bad_target_is_one_line(self, sched: SlurmScheduler) -> None:
        with pytest.raises(ValueError, match="ssh='-oProxyCommand=x' has an empty host"):
            sched.submit_dryrun(AppDef("app", [_role()]), {"ssh": "-oProxyCommand=x"})

    def test_the_workspace_is_staged_here_not_in_job_dir(
        self, sched: SlurmScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "ws").mkdir()
        (tmp_path / "ws" / "train.py").write_text("print(1)\n")
        role = _role()
        cfg = {"ssh": "login1", "job_dir": "~/runs/r1"}
        sched.build_workspace_and_update_role(role, str(tmp_path / "ws"), cfg)
        assert role.image == "runs/r1"
        assert not (tmp_path / "runs").exists() and not (tmp_path / "~").exists()
        staged = sched._dir_workspace.staged["runs/r1"]
        assert (Path(staged) / "train.py").read_text() == "print(1)\n"
        assert os.stat(os.path.dirname(staged)).st_mode & 0o077 == 0
        assert sched.planned_image(_role(), cfg) == "runs/r1"


@pytest.mark.parametrize("job_dir", ["~/runs/keep\n", "runs/keep ", " runs/keep", "a\tb"])
def test_a_job_dir_with_blanks_around_or_control_characters_is_refused(
    sched: SlurmScheduler, tmp_path: Path, job_dir: str
) -> None:
    """A login node's output loses a trailing line break: ``keep\\n`` read back as the
    existing ``keep``, which a refused submission then deleted (third audit, High)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    role = Role("r", image="", entrypoint="true")
    cfg = {"ssh": "login1", "job_dir": job_dir}
    with pytest.raises(ValueError, match="blanks around it or a control character"):
        sched.build_workspace_and_update_role(role, str(workspace), cfg)
    with pytest.raises(ValueError, match="blanks around it or a control character"):
        sched.submit_dryrun(AppDef("a", [role]), cfg)


@pytest.mark.parametrize(
    "text", ["u@-oProxyCommand=touch /tmp/x", "-u@host", "host:\uff12\uff12", "host:\u0662\u0662"]
)
def test_an_option_in_the_host_part_or_unicode_digits_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        SshTarget.parse(text)


def test_the_shared_connection_does_not_linger() -> None:
    argv = ssh_argv(SshTarget("login1"), "true")
    (persist,) = [w for w in argv if w.startswith("ControlPersist=")]
    assert int(persist.split("=")[1]) <= 60


def test_the_job_id_inside_the_job_names_the_login_node(sched: SlurmScheduler) -> None:
    from torchx.specs import macros

    role = Role(
        "r", image="", entrypoint="true", env={"TORCHX_JOB_ID": f"slurm://s/{macros.app_id}"}
    )
    req = sched.submit_dryrun(AppDef("a", [role]), {"ssh": "alice@login1:2222"}).request
    (line,) = req.replicas["r-0"].env_file()
    assert line.endswith("'\"$SLURM_JOB_ID\"'@alice@login1:2222'\"'\"''")


def test_the_workspace_stream_keeps_sparse_files_sparse(tmp_path: Path) -> None:
    """What the login node's tar gets: a sparse file in GNU's sparse format (its holes
    neither sent nor written), everything else as it is."""
    import tarfile

    from torchx.schedulers._slurm.remote import _add_tree

    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    with open(ws / "sub" / "ckpt.bin", "wb") as f:
        f.write(b"head")
        f.seek(64 << 20)
        f.write(b"tail")
    with open(ws / "ends-in-a-hole.bin", "wb") as f:
        f.write(b"x")
        f.truncate(8 << 20)
    (ws / "plain.txt").write_text("hi\n")
    os.symlink("plain.txt", ws / "link")
    stream = tmp_path / "stream.tar"
    with tarfile.open(stream, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(os.listdir(ws)):
            _add_tree(tar, str(ws / name), name)
    assert stream.stat().st_size < 1 << 20  # not the 72 MiB the files claim
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "-x", "-k", "-f", str(stream), "-C", str(out)], check=True)
    for name in ("sub/ckpt.bin", "ends-in-a-hole.bin", "plain.txt"):
        assert (out / name).read_bytes() == (ws / name).read_bytes(), name
    assert (out / "sub" / "ckpt.bin").stat().st_blocks * 512 < 1 << 20
    assert os.readlink(out / "link") == "plain.txt"
