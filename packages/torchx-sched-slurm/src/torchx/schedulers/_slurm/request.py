"""The ``sbatch`` request of an app: run options, het components, the batch script, and a
sweep's job arrays.

One het component per replica; each gets an ``#SBATCH`` line (job name
``<app>:<role>-<i>``, per-replica options, resources) and a part of the one ``srun`` line
that starts them all. Arguments and env values are shell-quoted so they reach the program
byte for byte; the job id, unknown until ``sbatch`` answers, is a mark that the script
turns into ``"$SLURM_JOB_ID"``.

A sweep is one job array (``--array=0-(N-1)%K``), split into several arrays under one app
id (``FIRST,SECOND``) when it has more elements than the cluster's ``MaxArraySize``
allows. Every array task runs the same batch script; the script picks its element from
its position (``TORCHX_ARRAY_OFFSET`` + ``SLURM_ARRAY_TASK_ID``) and runs it with
``srun``, its logs named by the first array's id and the element's position
(``slurm-<id>-<role>-<position>.out``), as a replica's are.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable, Mapping
from shlex import join, quote
from typing import Any

from torchx.schedulers._slurm import commands, containers, oci, validate
from torchx.schedulers._slurm.commands import SlurmNotFoundError
from torchx.schedulers._slurm.keys import comment_with_key
from torchx.schedulers._slurm.oci import RoleBundle
from torchx.schedulers._slurm.workspaces import remote_job_dir
from torchx.schedulers._slurm.workspaces import via as via_of
from torchx.schedulers.api import HELP_KEY, StructuredOpts, with_full_job_id
from torchx.schedulers.ids import current_key
from torchx.settings import ENV_TORCHX_ATTEMPT
from torchx.specs.api import AppDef, AppDryRunInfo, CfgVal, Resource, Role, macros
from torchx.specs.replica_macros import ReplicaMacros
from torchx.specs.sweep import AppArray
from torchx.util.startup.lazy_dataclass import dataclass, field
from torchx.util.strings import escape_unprintable
from torchx.util.support.host_checks import host_problem
from torchx.util.support.programs import find_program
from torchx.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.ssh import SshTarget

__all__ = [
    "SBATCH_GROUP_OPTIONS",
    "SBATCH_JOB_OPTIONS",
    "Opts",
    "SlurmArray",
    "SlurmBatchRequest",
    "SlurmOpts",
    "SlurmReplicaRequest",
    "array_commands",
    "array_script",
    "max_array_size",
    "script_of",
    "shown",
]


SBATCH_JOB_OPTIONS = ("account", "comment", "mail-user", "mail-type")
"""Run options passed once, on the ``sbatch`` command line (in this order)."""

SBATCH_GROUP_OPTIONS = ("partition", "time", "constraint", "qos")
"""Run options repeated on the ``#SBATCH`` line of every het component."""

RANK0_ENV = "SLURM_JOB_NODELIST_HET_GROUP_0"
_JOB_ID = '"$SLURM_JOB_ID"'
GPUS_PER_NODE_SINCE = (24, 11)
"""The Slurm version from which a het component asks for GPUs per node, not per task."""
APP_ID_MARK = "\0app_id\0"
"""Stands for the job id in a request until the script is written."""


@dataclass
class Opts(StructuredOpts):
    """Run options of ``slurm`` (help in field metadata: read on every ``torchx run``)."""

    account: str | None = field(
        default=None, metadata={HELP_KEY: "account to charge the job to (sbatch --account)"}
    )
    partition: str | None = field(
        default=None,
        metadata={HELP_KEY: "partition to run in (default: the cluster's default partition)"},
    )
    time: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "time limit per replica: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or"
            " D-HH:MM:SS"
        },
    )
    comment: str | None = field(
        default=None, metadata={HELP_KEY: "comment shown in squeue/sacct (sbatch --comment)"}
    )
    constraint: str | None = field(
        default=None, metadata={HELP_KEY: "node features required (sbatch --constraint)"}
    )
    mail_user: str | None = field(
        default=None,
        metadata={"cfg_key": "mail-user", HELP_KEY: "who to mail job events to"},
    )
    mail_type: str | None = field(
        default=None,
        metadata={
            "cfg_key": "mail-type",
            HELP_KEY: "which events to mail (e.g. END,FAIL; sbatch --mail-type)",
        },
    )
    job_dir: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "new directory to copy the workspace into and run the job from (must"
            " not exist); logs are written there"
        },
    )
    qos: str | None = field(default=None, metadata={HELP_KEY: "quality of service (sbatch --qos)"})
    list_days: int = field(
        default=3,
        metadata={HELP_KEY: "how many days back `torchx list` looks in Slurm's accounting"},
    )
    requeue: bool = field(
        default=True,
        metadata={
            HELP_KEY: "let Slurm requeue the job after a preemption or a node failure; it"
            " starts again as the next attempt ($TORCHX_ATTEMPT), its logs kept"
            " (False: sbatch --no-requeue)"
        },
    )
    signal: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "warn the replicas before the time limit, in sbatch's syntax"
            " SIG[@SECONDS] (e.g. USR1@120: SIGUSR1 two minutes before); with requeue, a job"
            " whose replicas end after the warning is requeued and resumes as the next attempt"
        },
    )
    max_requeues: int = field(
        default=10,
        metadata={
            HELP_KEY: "how many times in all a job whose replicas end after the warning"
            " (signal) is requeued; past it the job ends FAILED with cause time_limit"
        },
    )
    container: str = field(
        default="none",
        metadata={
            HELP_KEY: "run each replica inside its role's image: none (the image is a"
            " directory on the nodes), oci (Slurm's own OCI support, configured in the"
            " cluster's oci.conf; the image is unpacked with skopeo and umoci into"
            " container_cache) or pyxis (NVIDIA's pyxis plugin pulls it on the nodes)"
        },
    )
    container_cache: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "directory every node can read where container=oci keeps unpacked"
            " images, one per digest (default: $TORCHX_HOME/slurm/oci)"
        },
    )
    ssh: str | None = field(
        default=None,
        metadata={
            HELP_KEY: "submit from this host through a login node: [user@]host[:port] or a"
            " Host alias of ~/.ssh/config; every Slurm command runs there over one shared ssh"
            " connection (your keys and agent, never a password prompt), job_dir and the"
            " logs are on the cluster, and the handle names the login node"
        },
    )
    strict_entrypoint: bool = field(
        default=False,
        metadata={
            HELP_KEY: "refuse a job whose entrypoint is not found on this (submit) host;"
            " by default that is one warning, as compute nodes may have programs it lacks"
        },
    )


SlurmOpts = Opts
"""Compat name of :class:`Opts`."""


def _shell_word(value: str, job_id: str = _JOB_ID) -> str:
    """``value`` quoted for bash; the job-id mark becomes ``job_id`` (by default
    ``"$SLURM_JOB_ID"``; a sweep's elements name their array instead)."""
    if APP_ID_MARK not in value:
        return quote(value)
    return job_id.join(quote(part) if part else "" for part in value.split(APP_ID_MARK))


_BARE_SBATCH = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/=%@+-[]"
)


def sbatch_value(option: str, value: str) -> str:
    """``value`` as one word of an ``#SBATCH`` line (the one quoting of that context).

    sbatch splits a directive at blanks unless they are inside double quotes, in which
    ``\\`` and ``\"`` escape; it reads directives only up to the first line that is not
    one, so a value with a line break cannot be represented and is refused.
    """
    if any(c in value for c in "\n\r\0"):
        raise ValueError(
            f"{option} {value!r} contains a line break or NUL, which an #SBATCH line cannot"
            " hold; give a value on one line"
        )
    if value and set(value) <= _BARE_SBATCH:
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def comment_text(text: str) -> str:
    """``text`` for a ``#`` comment line of the script (the one quoting of that context):
    line breaks and other unprintable characters are written as escapes, so the comment
    cannot end early and leave the rest to run as shell."""

    return escape_unprintable(text)


def safe_name(value: str) -> str:
    """``value`` with everything but letters, digits, ``_``, ``.`` and ``-`` made ``_``."""
    return "".join(c if (c.isalnum() and c.isascii()) or c in "_.-" else "_" for c in value)


@dataclass
class SlurmReplicaRequest:
    """One het component: the ``#SBATCH`` options and the ``srun`` command of a replica."""

    name: str
    entrypoint: str
    args: list[str]
    srun_opts: dict[str, str]
    sbatch_opts: dict[str, str | None]
    env: dict[str, str]

    @classmethod
    def from_role(
        cls,
        name: str,
        role: Role,
        cfg: Mapping[str, CfgVal],
        nomem: bool,
        log_dir: str = "",
        *,
        gpus_per_node: bool | None = None,
    ) -> SlurmReplicaRequest:
        """The request of replica ``name`` (``<role>-<i>``) of an already-substituted role.

        ``gpus_per_node``: whether the cluster's Slurm takes ``--gpus-per-node``; ``None``
        asks the cluster (its login node, where ``cfg`` names one) when the role has GPUs.
        """
        opts = Opts.from_cfg(cfg)
        if gpus_per_node is None:
            gpus_per_node = (
                role.resource.gpu > 0 and commands.version(via_of(cfg)) >= GPUS_PER_NODE_SINCE
            )
        sbatch_opts = group_opts(opts, role.resource, nomem, gpus_per_node)
        entrypoint, args = launcher_ignores_warning(role.entrypoint, list(role.args), opts.signal)
        return cls(
            name=name,
            entrypoint=entrypoint,
            args=args,
            srun_opts=_srun_opts(log_dir, name),
            sbatch_opts=sbatch_opts,
            env=dict(role.env),
        )

    def materialize(self, env_dir: str = ".", job_id: str = _JOB_ID) -> tuple[list[str], list[str]]:
        """(``#SBATCH`` arguments, ``srun`` arguments) of this component, shell-quoted.

        The role's env is not on the ``srun`` line (``ps`` and ``sacct``'s SubmitLine show
        it to every user): the replica's command starts by reading it from its private
        file in ``env_dir`` (:meth:`env_file`, written by the batch script). The job id
        mark becomes ``job_id``, a shell expression."""
        sbatch_args = [f"--job-name={sbatch_value('job name', self.name)}"]
        for key, value in self.sbatch_opts.items():
            sbatch_args.append(
                f"--{key}" if value is None else f"--{key}={sbatch_value(key, value)}"
            )
        srun_args = [
            f"--{key}={_shell_word(value, job_id)}" if value else f"--{key}"
            for key, value in self.srun_opts.items()
        ]
        words = [self.entrypoint, *self.args]
        if self.env:
            words = ["/bin/sh", "-c", _LOAD_ENV, "torchx-env", self.env_path(env_dir), *words]
        # srun splits its arguments at every ":" (het components), so a command holding a
        # ":" word runs under `bash -c`, quoted twice, and srun never sees its words.
        if ":" in words:
            # the job id mark becomes "$SLURM_JOB_ID" in the outer quoting: the batch
            # script splices the job id's digits into the inner text
            inner = " ".join(quote(word) for word in ["exec", *words])
            srun_args += ["/bin/bash", "-c", _shell_word(inner, job_id)]
        else:
            srun_args += [_shell_word(word, job_id) for word in words]
        return sbatch_args, srun_args

    def env_path(self, env_dir: str) -> str:
        """Where this component's env file is (the job id as :data:`APP_ID_MARK`)."""
        return f"{env_dir}/{safe_name(self.name)}"

    def env_file(self, job_id: str = _JOB_ID) -> list[str]:
        """The lines of the env file, shell-quoted for ``printf`` in the batch script (the
        job id mark is expanded when the script writes them): ``export NAME='value'``, and
        names a shell cannot assign (``MY-VAR``) set by ``env`` as it starts the command."""
        lines = [f"export {k}={quote(v)}" for k, v in self.env.items() if _is_identifier(k)]
        others = [quote(f"{k}={v}") for k, v in self.env.items() if not _is_identifier(k)]
        if others:
            lines.append(f'exec env -- {" ".join(others)} "$@"')
        return [_shell_word(line, job_id) for line in lines]


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and name.isascii()


_LOAD_ENV = (
    'f="$1" && shift && d="${f%/*}"'
    ' && { [ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] && [ -f "$f" ] && [ ! -L "$f" ]'
    ' && [ -O "$f" ] && case "$(ls -ld -- "$d")" in drwx------*) ;; *) false ;; esac'
    ' || { echo "torchx: not reading $f: it or its directory is not the job user own private one"'
    ' >&2; exit 1; }; } && . "$f" && exec "$@"'
)
"""What a replica runs first when its role has env: reads the file (``$1``) only if it
and its directory are the job user's own, not links, the directory mode 0700 (another
user who can write the job's directory must not have made them), then becomes the role's
command (the other words). Plain POSIX ``sh`` and ``ls``: it runs in the role's image."""

ENV_DIR_CHECK = (
    'torchx_own_dir() { [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ]'
    ' && case "$(ls -ld -- "$1")" in drwx------*) ;; *) false ;; esac; }'
)
"""The batch script's test of an env directory: a directory, not a link, the job user's,
mode 0700."""


def env_dir_lines(env_dir: str, job_id: str = _JOB_ID, indent: str = "") -> list[str]:
    """Batch-script lines that make the private directory of the role env files, new.

    ``mkdir`` without ``-p`` fails on a directory someone else made first (a shared,
    sticky job directory lets another user pre-make ``.torchx-env-<next job id>``); the
    job then stops before any env is written. A directory that passes the check is an
    earlier attempt's of this same job (a requeue), and is made anew."""
    refuse = (
        "echo \"torchx: $envdir exists and is not this job's own private directory"
        " (another user may have made it): the role's env is not written there; remove it"
        ' and run the job again" >&2; exit 1'
    )
    return [
        f"{indent}envdir={_shell_word(env_dir, job_id)}",
        f"{indent}{ENV_DIR_CHECK}",
        f'{indent}if [ -e "$envdir" ] || [ -L "$envdir" ]; then',
        f'{indent}    torchx_own_dir "$envdir" || {{ {refuse}; }}',
        f'{indent}    rm -rf -- "$envdir"',
        f"{indent}fi",
        f'{indent}(umask 077 && mkdir -- "$envdir") && torchx_own_dir "$envdir" || {{ {refuse}; }}',
    ]


def env_file_line(replica: SlurmReplicaRequest, job_id: str = _JOB_ID, indent: str = "") -> str:
    """The batch-script line that writes ``replica``'s env file, created exclusively
    (``set -C``: it fails on a file that is there)."""
    return (
        f"{indent}(umask 077 && set -C && printf '%s\\n' {' '.join(replica.env_file(job_id))}"
        f' >"$envdir"/{_shell_word(safe_name(replica.name))}) || exit 1'
    )


_WARNING_SIGNAL = re.compile(r"^(?:(?P<where>[RB]):)?(?P<signal>[A-Za-z0-9]+)(?:@\d+)?$")


def launcher_ignores_warning(
    entrypoint: str, args: list[str], signal: str | None
) -> tuple[str, list[str]]:
    """The replica's command when the ``signal`` run option warns the steps before the
    time limit: ``torchrun`` (``dist.ddp``'s ``bash -c "torchrun ..."``, or torchrun
    itself) starts with that signal ignored (``trap '' USR1``), so Slurm's warning, which
    reaches every process of the step, does not kill the launcher mid-save. The ignore
    stays across ``exec``: a trainer that saves on the warning installs its own handler,
    and torchrun then exits as its workers do. Any other command gets the signal as it
    is."""
    found = _WARNING_SIGNAL.match(signal or "")
    if found is None or found["where"] == "B":  # B: only the batch shell is warned
        return entrypoint, args
    trap = f"trap '' {found['signal']}; "
    program = os.path.basename(entrypoint)
    if program in ("bash", "sh") and len(args) >= 2 and args[0] == "-c":
        if args[1].lstrip().startswith("torchrun "):
            return entrypoint, ["-c", trap + args[1], *args[2:]]
    elif program == "torchrun":
        return "/bin/sh", ["-c", trap + 'exec "$@"', "torchx-launcher", entrypoint, *args]
    return entrypoint, args


def group_opts(
    opts: Opts, resource: Resource, nomem: bool, gpus_per_node: bool
) -> dict[str, str | None]:
    """The ``#SBATCH`` options of one het component (in upstream's order); GPUs as
    ``--gpus-per-node`` where the cluster's Slurm takes it (``GPUS_PER_NODE_SINCE``)."""
    group: dict[str, str | None] = {"requeue" if opts.requeue else "no-requeue": None}
    for key in SBATCH_GROUP_OPTIONS:
        value = opts.get(key)
        if value is not None:
            group[key] = str(value)
    if opts.signal is not None:
        group["signal"] = opts.signal  # every het component: each is its own Slurm job
    _resource_opts(group, resource, nomem, gpus_per_node)
    return group


def _resource_opts(
    opts: dict[str, str | None], resource: Resource, nomem: bool, gpus_per_node: bool
) -> None:
    opts.setdefault("ntasks-per-node", "1")
    if resource.cpu > 0:
        opts.setdefault("cpus-per-task", str(int(resource.cpu)))
    if resource.memMB > 0 and not nomem:
        opts.setdefault("mem", str(int(resource.memMB)))
    if resource.gpu > 0:
        if gpus_per_node:
            opts.setdefault("gpus-per-node", str(resource.gpu))
        else:
            opts.setdefault("gpus-per-task", str(resource.gpu))
            opts.setdefault("ntasks", "1")


def _srun_opts(log_dir: str, name: str) -> dict[str, str]:
    # srun expands %-patterns in file names: double any % of the directory
    prefix = f"{log_dir.replace('%', '%%')}/" if log_dir else ""
    base = f"{prefix}slurm-{APP_ID_MARK}-{name}"
    return {
        "output": f"{base}.out",
        "error": f"{base}.err",
        "open-mode": "append",  # a requeued job adds to its logs instead of erasing them
        "wait": "60",
        "kill-on-bad-exit": "1",
    }


@dataclass
class SlurmBatchRequest:
    """The ``sbatch`` command and the het components of one app.

    ``log_dir`` is where the replicas' logs go (the job's directory), ``app_name`` and
    ``roles`` (role name -> replica count) are recorded for ``describe`` and ``log``.
    ``warning_lead_s`` is the lead time of the ``signal`` run option when the job may
    be requeued after its warning (None otherwise), at most ``max_requeues`` times.
    ``bundles`` are the OCI bundles
    (``container=oci``) to make, from images unpacked into ``container_cache``, before
    the job is queued. ``images_to_push`` is the ``docker`` workspace builder's push plan,
    ``(builder name, images)``, pushed before anything else; None when nothing is pushed.
    """

    cmd: list[str]
    replicas: dict[str, SlurmReplicaRequest]
    job_dir: str | None
    max_retries: int = 0
    log_dir: str = ""
    app_name: str = ""
    roles: dict[str, int] = field(default_factory=dict)
    warning_lead_s: int | None = None
    max_requeues: int = 10
    bundles: list[RoleBundle] = field(default_factory=list)
    container_cache: str | None = None
    via: SshTarget | None = None
    """The login node (``ssh`` run option) the job is submitted through, if any."""
    array: SlurmArray | None = None
    """A sweep's job array(s): ``replicas`` are then its elements, one per position."""
    images_to_push: tuple[str, Any] | None = None

    def materialize(self) -> str:
        """The batch script.

        Every attempt (a requeue starts the script again) exports ``TORCHX_ATTEMPT``
        (Slurm's restart count) and, from the second on, marks its start in each log the
        earlier attempts wrote (every log is opened for appending, so nothing is lost). A
        failed attempt is requeued when it ended after the time-limit warning (the replicas
        saved their work and stopped) or while the app's ``max_retries`` last; the reason
        is logged on a ``torchx: requeued:`` line, which also counts the retries spent.
        """
        lines = [
            "#!/bin/bash",
            "#",
            f"# Generated by TorchX {__version__}",
            f"# Run with: {comment_text(join(self.cmd))}",
            "#",
        ]
        groups: list[list[str]] = []
        log_prefix = f"{self.log_dir.replace('%', '%%')}/" if self.log_dir else ""
        env_dir = f"{self.log_dir or '.'}/.torchx-env-{APP_ID_MARK}"
        env_lines: list[str] = []
        for i, replica in enumerate(self.replicas.values()):
            sbatch_args, srun_args = replica.materialize(env_dir)
            if i > 0:
                # srun carries the first component's --container to the others; setting it
                # again frees the copy the earlier components hold (see _app_bundle)
                srun_args = [a for a in srun_args if not a.startswith("--container=")]
            if replica.env:
                if not env_lines:  # one private directory of env files, shared by the nodes
                    env_lines = env_dir_lines(env_dir)
                env_lines.append(env_file_line(replica))
            if i == 0:
                output = sbatch_value("the log directory", f"{log_prefix}slurm-%j.out")
                sbatch_args += [f"--output={output}", "--open-mode=append"]
            else:
                lines.append("#SBATCH hetjob")
            lines.append("#SBATCH " + " ".join(sbatch_args))
            groups.append(srun_args)
        logs = _shell_word(f"{self.log_dir}/" if self.log_dir else "./")
        batch_log = f'{logs}slurm-"$SLURM_JOB_ID".out'
        replica_logs = f'{logs}slurm-"$SLURM_JOB_ID"-*'
        lines += [
            "set -e",
            "",
            "export PYTHONUNBUFFERED=1",
            "export SLURM_UNBUFFEREDIO=1",
            f"export TORCHX_MAX_RETRIES={int(self.max_retries)}",
            f'export {ENV_TORCHX_ATTEMPT}="${{SLURM_RESTART_COUNT:-0}}"',
            "",
            'if [ "$TORCHX_ATTEMPT" -gt 0 ]; then',
            '    echo "torchx: attempt $TORCHX_ATTEMPT starts"',
            f"    for log in {replica_logs}.out {replica_logs}.err; do",
            '        if [ -f "$log" ]; then',
            '            echo "=== torchx: attempt $TORCHX_ATTEMPT ===" >>"$log"',
            "        fi",
            "    done",
            "fi",
            "",
            *env_lines,
            "set +e",
            "srun " + " :\\\n    ".join(" ".join(group) for group in groups),
            "exitcode=$?",
            *(['rm -rf -- "$envdir"'] if env_lines else []),
            "",
            'echo "job exited with code $exitcode"',
            "if [ $exitcode -eq 0 ]; then",
            "    exit 0",
            "fi",
        ]
        if self.warning_lead_s is not None:
            # Slurm sends the warning up to a minute early: the window is lead + 60 s
            window = self.warning_lead_s + 60
            bound = int(self.max_requeues)
            lines += [
                'end="$(squeue -h -j "$SLURM_JOB_ID" -o %e | head -n 1)"',
                'if [ -n "$end" ] && end_s="$(date -d "$end" +%s)" && '
                f"[ $((end_s - $(date +%s))) -le {window} ]; then",
                f"    requeues=$(grep -c '^torchx: requeueing: TIMEOUT' {batch_log} 2>/dev/null)",
                f'    if [ "${{requeues:-0}}" -ge {bound} ]; then',
                f'        echo "{GAVE_UP}(max_requeues={bound})"',
                "        exit $exitcode",
                "    fi",
                *_requeue("TIMEOUT (the replicas stopped after the warning signal)", "TIMEOUT"),
                "    exit $exitcode",
                "fi",
            ]
        return "\n".join([*lines, *retry_lines(batch_log)])

    def __repr__(self) -> str:
        return (
            f"{join(self.cmd)} $SBATCH_SCRIPT\n"
            "#----------------\n# SBATCH_SCRIPT\n#----------------\n" + self.materialize()
        )


GAVE_UP = "torchx: not requeued: TIMEOUT, every requeue spent "
"""The batch log's line when the job stopped after the warning once more than
``max_requeues`` allows: the job ends FAILED, its cause ``time_limit``."""


def retry_lines(batch_log: str) -> list[str]:
    """The end of a batch script: a failed job is requeued while ``TORCHX_MAX_RETRIES``
    last (its requeues counted in ``batch_log``, a shell word), then exits as it ended."""
    return [
        f"retries=$(grep -c '^torchx: requeueing: FAILED' {batch_log} 2>/dev/null)",
        'retries="${retries:-0}"',
        'if [ "$TORCHX_MAX_RETRIES" -gt "$retries" ]; then',
        *_requeue(
            "FAILED (exit code $exitcode; retry $((retries + 1)) of $TORCHX_MAX_RETRIES)",
            "FAILED",
        ),
        "fi",
        "exit $exitcode",
        "",
    ]


def _requeue(reason: str, kind: str) -> list[str]:
    """The script lines that requeue the job for ``reason``: the attempt is counted first
    (``torchx: requeueing: KIND``, which bounds the retries even if Slurm ends the script
    as it requeues the job), the ``torchx: requeued:`` line that ``status`` reads is written
    only once Slurm took the requeue, and a refused requeue ends the job as failed, with
    scontrol's exit code (what ``sacct`` then shows, as upstream's script under ``set -e``
    had it)."""
    return [
        f'    echo "torchx: requeueing: {kind}"',
        '    if scontrol requeue "$SLURM_JOB_ID"; then',
        f'        echo "torchx: requeued: {reason}"',
        "    else",
        "        refused=$?",
        '        echo "torchx: the requeue was refused (scontrol requeue exited $refused); the'
        ' job ends FAILED"',
        "        exit $refused",
        "    fi",
    ]


class RoleTemplate:
    """What all replicas of a role share; :meth:`for_replica` fills in the macros.

    The macros are substituted by :class:`ReplicaMacros`, once for the whole role when no
    argument or env value mentions ``replica_id``, so a 10,000-replica role costs little
    more than 10,000 small objects.
    """

    __slots__ = (
        "_shared",
        "container_opts",
        "entrypoint",
        "log_dir",
        "sbatch_opts",
        "signal",
        "subst",
    )

    def __init__(
        self,
        role: Role,
        sbatch_opts: dict[str, str | None],
        log_dir: str,
        container_opts: Mapping[str, str] | None = None,
        signal: str | None = None,
    ) -> None:
        self.entrypoint = role.entrypoint
        self.signal = signal
        self.subst = ReplicaMacros(role.args, role.env)
        self.sbatch_opts = sbatch_opts
        self.log_dir = log_dir
        self.container_opts = dict(container_opts or {})
        self._shared: tuple[list[str], dict[str, str]] | None = None

    def for_replica(self, name: str, job_name: str, values: dict[str, str]) -> SlurmReplicaRequest:
        """The request of one replica; ``values`` differ between replicas only in
        ``replica_id``."""
        if self.subst.per_replica:
            args, env = self.subst.apply(values)
        else:
            if self._shared is None:
                self._shared = self.subst.apply(values)
            args, env = self._shared
        entrypoint, args = launcher_ignores_warning(self.entrypoint, args, self.signal)
        return SlurmReplicaRequest(
            name=job_name,
            entrypoint=entrypoint,
            args=args,
            srun_opts={**_srun_opts(self.log_dir, name), **self.container_opts},
            sbatch_opts=dict(self.sbatch_opts),
            env=env,
        )


def _app_bundle(
    bundles: list[RoleBundle], role: Role, path: str, workdir: str, image_workdir: bool
) -> RoleBundle:
    """The one bundle every role of a ``container=oci`` app runs in (made at ``path`` by
    the first role): ``srun`` 22.05 to 25.x keeps a single ``--container`` per het step
    (the path it copies between components is freed when a later component sets its own,
    and a replica then starts from a garbage path), so roles may differ only in GPUs."""
    mounts = list(role.mounts)
    if not bundles:
        bundles.append(
            RoleBundle(
                role.name, role.image, path, workdir, mounts, role.resource.gpu > 0, image_workdir
            )
        )
        return bundles[0]
    first = bundles[0]
    if role.image != first.image or mounts != first.mounts:
        what = "image" if role.image != first.image else "mounts"
        raise ValueError(
            f"role {role.name!r} has another {what} than role {first.role!r}; with"
            " container=oci every role of an app runs in one image with one set of mounts"
            " (Slurm's srun keeps one --container per step): give the roles the same"
            " image and mounts, or submit them as separate apps"
        )
    first.gpus = first.gpus or role.resource.gpu > 0
    return first


def assemble(
    app: AppDef,
    opts: Opts,
    *,
    via: SshTarget | None,
    job_dir: str | None,
    workdir: str,
    mode: str,
    nomem: bool,
    gpus_per_node: bool,
    warning_lead_s: int | None,
    bundles_dir: str,
    container_cache: str | None,
    image_workdir: bool = False,
) -> SlurmBatchRequest:
    """The request for ``app``: its ``sbatch`` command and one het component per replica.

    Pure: every check against the host or the cluster happened before (the scheduler's
    ``_submit_dryrun``); ``workdir`` is where the logs go, ``mode`` the container mode,
    ``bundles_dir`` where ``container=oci`` bundles are made ("" otherwise);
    ``gpus_per_node`` whether the cluster's Slurm takes ``--gpus-per-node``. A sweep gets
    one replica per element (the scheduler adds its arrays, ``array_request``).
    ``image_workdir``: in a container, start in the image's working directory (where a
    ``docker`` workspace build put the code) rather than the job's directory.
    """
    array = app if isinstance(app, AppArray) else None
    idempotency_key = current_key()
    cmd = ["sbatch", "--parsable"]
    for key in SBATCH_JOB_OPTIONS:
        value = opts.get(key)
        if key == "comment" and idempotency_key is not None:
            value = comment_with_key(
                None if value is None else str(value), idempotency_key
            )  # how the key is found again
        if value is not None:
            cmd.append(f"--{key}={value}")
    app_label = safe_name(app.name) or "app"
    bundles: list[RoleBundle] = []
    replicas: dict[str, SlurmReplicaRequest] = {}
    roles: dict[str, int] = {}
    for role in app.roles:
        if mode != "none":
            containers.check_mounts(role, mode)
        if "=" in role.entrypoint:
            raise ValueError(
                f"entrypoint {role.entrypoint!r} of role {role.name!r} contains '=';"
                " give the program's path without '=' (arguments go in Role.args)"
            )
        roles[role.name] = role.num_replicas
        role_label = safe_name(role.name) or "role"
        container_opts: dict[str, str] = {}
        if mode == "pyxis":
            container_opts = containers.pyxis_srun_opts(role, job_dir or workdir, image_workdir)
        elif mode == "oci":
            bundle = _app_bundle(
                bundles, role, f"{bundles_dir}/{role_label}", workdir, image_workdir
            )
            container_opts = containers.oci_srun_opts(bundle.path)
        template = RoleTemplate(
            role,
            group_opts(opts, role.resource, nomem, gpus_per_node),
            workdir,
            container_opts,
            opts.signal,
        )
        # every macro (base_img_root too), as the other schedulers substitute them;
        # inside a container the image is the root
        shared = macros.Values(
            img_root=role.image if mode == "none" else "",
            app_id=APP_ID_MARK,
            replica_id="",
            rank0_env=RANK0_ENV,
        ).to_dict()
        if array is not None:  # one replica per element, each with its own args and env
            roles[role.name] = len(array.elements)
            for p in range(len(array.elements)):
                name = f"{role_label}-{p}"
                element = RoleTemplate(
                    array.element_role(p),
                    template.sbatch_opts,
                    workdir,
                    container_opts,
                    opts.signal,
                )
                values = {**shared, "replica_id": str(p)}
                replicas[name] = element.for_replica(
                    name, f"{app_label}:{role_label}-array", values
                )
            continue
        for i in range(role.num_replicas):
            name = f"{role_label}-{i}"
            values = {**shared, "replica_id": str(i)}
            replicas[name] = template.for_replica(name, f"{app_label}:{name}", values)
    return SlurmBatchRequest(
        cmd=cmd,
        replicas=replicas,
        job_dir=job_dir,
        max_retries=min(role.max_retries for role in app.roles),
        log_dir=workdir,
        app_name=app.name,
        roles=roles,
        warning_lead_s=warning_lead_s,
        max_requeues=opts.max_requeues,
        bundles=bundles,
        via=via,
        container_cache=container_cache if bundles else None,
    )


_APP = '"$app"'
"""The app id (the first array's job id) in the script: what the job-id mark becomes."""
_DEFAULT_MAX_ARRAY_SIZE = 1001  # Slurm's default


@dataclass
class SlurmArray:
    """A sweep's arrays: ``size`` elements, at most ``max_parallel`` running, in arrays of
    at most ``max_array_size`` tasks (0: one array); each element's sweep index and values
    for ``describe``."""

    size: int
    max_parallel: int | None = None
    max_array_size: int = 0
    indices: list[int] = field(default_factory=list)
    values: list[dict[str, str]] = field(default_factory=list)
    sweep_size: int = 0

    def chunks(self) -> list[tuple[int, int]]:
        """``(offset, count)`` of each array, in submission order."""
        step = self.max_array_size if self.max_array_size > 0 else self.size
        return [(start, min(step, self.size - start)) for start in range(0, self.size, step)]

    def to_record(self) -> str:
        """What the job record keeps of it (JSON, read by :func:`describe_array`)."""

        return json.dumps(
            {
                "size": self.size,
                "indices": self.indices,
                "values": self.values,
                "sweep_size": self.sweep_size,
            }
        )


def max_array_size(via: SshTarget | None) -> int:
    """The cluster's ``MaxArraySize`` (``scontrol show config``); Slurm's default if it
    does not say."""
    code, out, _ = commands.run_through_outages(["scontrol", "show", "config"], via=via)
    if code == 0:
        for line in out.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "MaxArraySize" and value.strip().isdigit():
                return int(value.strip())
    return _DEFAULT_MAX_ARRAY_SIZE


def job_name(req: SlurmBatchRequest, offset: int) -> str:
    first = next(iter(req.replicas.values()))
    return f"{first.name}-{offset}"


def array_commands(req: SlurmBatchRequest, job_ids: list[str]) -> list[list[str]]:
    """The ``sbatch`` command of each array; ``job_ids`` are those of the arrays submitted
    so far (the later arrays name the first, and with ``max_parallel`` wait for the one
    before; a dry run shows placeholders)."""
    array = req.array
    assert array is not None
    throttle = f"%{array.max_parallel}" if array.max_parallel else ""
    cmds = []
    for c, (offset, count) in enumerate(array.chunks()):
        cmd = [*req.cmd, f"--array=0-{count - 1}{throttle}"]
        if c > 0:
            first = job_ids[0] if job_ids else "FIRST_ARRAY_ID"
            cmd += [
                f"--job-name={job_name(req, offset)}",
                f"--export=ALL,TORCHX_ARRAY_OFFSET={offset},TORCHX_ARRAY_APP={first}",
            ]
            if array.max_parallel:  # at most K at once over all the arrays: one after another
                before = job_ids[c - 1] if len(job_ids) >= c else "PREVIOUS_ARRAY_ID"
                cmd.append(f"--dependency=afterany:{before}")
        cmds.append(cmd)
    return cmds


def array_script(req: SlurmBatchRequest) -> str:
    """The batch script every task of the sweep's arrays runs: it finds its element by its
    position and runs it as a replica runs (its env from a private file, ``srun`` with
    the element's logs); a failed element is requeued while ``max_retries`` last."""
    replicas = list(req.replicas.values())
    sbatch_args, _ = replicas[0].materialize()
    sbatch_args = [a for a in sbatch_args if not a.startswith("--job-name=")]
    log_prefix = f"{req.log_dir.replace('%', '%%')}/" if req.log_dir else ""
    output = sbatch_value("the log directory", f"{log_prefix}slurm-%A_%a.out")
    name = sbatch_value("job name", job_name(req, 0))
    lines = [
        "#!/bin/bash",
        "#",
        f"# Generated by TorchX {__version__}: a sweep of {len(replicas)} elements",
        f"# Run with: {join(req.cmd)} --array=...",
        "#",
        f"#SBATCH --job-name={name} {' '.join(sbatch_args)} --output={output} --open-mode=append",
        "set -e",
        "",
        "export PYTHONUNBUFFERED=1",
        "export SLURM_UNBUFFEREDIO=1",
        f"export TORCHX_MAX_RETRIES={int(req.max_retries)}",
        f'export {ENV_TORCHX_ATTEMPT}="${{SLURM_RESTART_COUNT:-0}}"',
        "pos=$(( ${TORCHX_ARRAY_OFFSET:-0} + SLURM_ARRAY_TASK_ID ))",
        'app="${TORCHX_ARRAY_APP:-$SLURM_ARRAY_JOB_ID}"',
        "",
        "set +e",
        'case "$pos" in',
    ]
    for p, replica in enumerate(replicas):
        env_dir = f"{req.log_dir or '.'}/.torchx-env-{APP_ID_MARK}-{p}"
        _, srun_args = replica.materialize(env_dir, job_id=_APP)
        lines.append(f"{p})")
        if replica.env:
            lines += env_dir_lines(env_dir, _APP, indent="    ")
            lines.append(env_file_line(replica, _APP, indent="    "))
        lines.append("    srun " + " ".join(srun_args))
        lines.append("    exitcode=$?")
        if replica.env:
            lines.append('    rm -rf -- "$envdir"')
        lines.append("    ;;")
    logs = _shell_word(f"{req.log_dir}/" if req.log_dir else "./")
    batch_log = f'{logs}slurm-"$SLURM_ARRAY_JOB_ID"_"$SLURM_ARRAY_TASK_ID".out'
    lines += [
        '*) echo "torchx: no element at position $pos of this sweep" >&2; exit 2 ;;',
        "esac",
        "",
        'echo "job exited with code $exitcode"',
        "if [ $exitcode -eq 0 ]; then",
        "    exit 0",
        "fi",
        *retry_lines(batch_log),
    ]
    return "\n".join(lines)


def script_of(req: SlurmBatchRequest) -> str:
    """The batch script ``sbatch`` is given: a sweep's, or the app's."""
    return array_script(req) if req.array is not None else req.materialize()


def shown(req: SlurmBatchRequest) -> str:
    """What ``--dryrun`` prints: the ``sbatch`` command(s), then the script."""
    if req.array is None:
        return repr(req)
    cmds = "\n".join(f"{join(c)} $SBATCH_SCRIPT" for c in array_commands(req, []))
    return f"{cmds}\n#----------------\n# SBATCH_SCRIPT\n#----------------\n" + array_script(req)


def build(
    app: AppDef,
    cfg: Mapping[str, CfgVal],
    *,
    image_built: bool,
    push_images: Callable[[], tuple[str, Any]],
    partition_has_no_mem: Callable[[str | None, SshTarget | None], bool],
) -> AppDryRunInfo[SlurmBatchRequest]:
    """Checks the run options, the host and the cluster, then assembles the request of
    ``app`` (:func:`assemble`), its sweep's arrays included.

    ``image_built``: the workspace is built into an image (``workspace_type=docker``);
    ``push_images`` says which images to push (called only when pyxis pulls them);
    ``partition_has_no_mem``: whether a partition takes no ``--mem`` (the scheduler caches
    the answer).
    """
    via = via_of(cfg)
    if via is not None:
        if find_program("ssh", os.environ.get("PATH", ""), os.getcwd()) is None:
            host_problem(
                FileNotFoundError(
                    f"ssh={via.spec} needs OpenSSH's ssh client on this host; install it"
                    " (Debian/Ubuntu: apt install openssh-client)"
                )
            )
    elif find_program("sbatch", os.environ.get("PATH", ""), os.getcwd()) is None:
        host_problem(SlurmNotFoundError("sbatch"))  # before any other check: it is the fix
    opts = Opts.from_cfg(cfg)
    if opts.job_dir is not None:
        validate.check_job_dir(opts.job_dir)
    validate.check_time(opts.time)
    lead_s = validate.check_signal(opts.signal) if opts.signal is not None else None
    if opts.max_requeues < 0:
        raise ValueError(
            f"max_requeues={opts.max_requeues} is negative; give 0 (never requeue after"
            " the warning) or more"
        )
    for key in (*SBATCH_GROUP_OPTIONS, *SBATCH_JOB_OPTIONS):
        value = opts.get(key)
        if key == "comment" and value is not None:
            validate.check_comment(str(value))
        elif value is not None:
            validate.check_option(key, str(value))
    mode = containers.check_mode(opts.container)
    images_to_push = None
    if image_built:
        # a workspace built into an image runs in it: pyxis pulls it from image_repo
        # (pushed first); oci unpacks it from this host's daemon, or from image_repo
        mode = "pyxis" if mode == "none" else mode
        if mode == "pyxis" or cfg.get("image_repo"):
            images_to_push = push_images()
    if via is None:
        job_dir = os.path.abspath(os.path.expanduser(opts.job_dir)) if opts.job_dir else None
        workdir = job_dir or os.getcwd()
        validate.check_log_dir(workdir)
        # a role run from a built image starts in the image, which holds its files
        if not image_built and (job_dir is None or os.path.isdir(job_dir)):
            for role in app.roles:
                validate.check_role_files(
                    role, workdir, opts.strict_entrypoint, in_container=mode != "none"
                )
    else:
        # on the login node: `~/x` and `x` are in the home there; the logs are written
        # relative to the job's directory (sbatch --chdir), which sbatch resolves there
        job_dir = remote_job_dir(opts.job_dir) if opts.job_dir else None
        workdir = ""
        validate.check_remote(via, mode, job_dir)
        # $TORCHX_JOB_ID is the handle `run` prints, login node included
        app = with_full_job_id(app, f"{macros.app_id}@{via.spec}")
    needs_memory = any(role.resource.memMB > 0 for role in app.roles)
    nomem = partition_has_no_mem(opts.partition, via) if needs_memory else False
    needs_gpus = any(role.resource.gpu > 0 for role in app.roles)
    gpus_per_node = needs_gpus and commands.version(via) >= GPUS_PER_NODE_SINCE
    if mode == "oci" and (missing := oci.missing_tools()):
        host_problem(oci.OciError(oci.missing_tools_message(missing)))
    bundles_dir = ""
    if mode == "oci":  # one directory of bundles per job, beside its logs
        app_label = safe_name(app.name) or "app"
        bundles_dir = os.path.join(workdir, oci.BUNDLES_DIR, f"{app_label}-{secrets.token_hex(4)}")
    cache = opts.container_cache
    request = assemble(
        app,
        opts,
        via=via,
        job_dir=job_dir,
        workdir=workdir,
        mode=mode,
        nomem=nomem,
        gpus_per_node=gpus_per_node,
        warning_lead_s=lead_s if opts.requeue else None,
        bundles_dir=bundles_dir,
        container_cache=(
            os.path.abspath(os.path.expanduser(cache)) if cache else oci.default_cache()
        )
        if mode == "oci"
        else None,
        image_workdir=image_built,
    )
    request.images_to_push = images_to_push
    if isinstance(app, AppArray):  # a sweep: one more call, to split it where it must
        request.array = SlurmArray(
            size=len(app.elements),
            max_parallel=app.max_parallel,
            max_array_size=max_array_size(via),
            indices=app.indices(),
            values=app.values(),
            sweep_size=app.size_of(),
        )
    return AppDryRunInfo(request, shown)
