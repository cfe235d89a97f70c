"""The ``sbatch`` request of an app: run options, het components and the batch script.

One het component per replica; each gets an ``#SBATCH`` line (job name
``<app>:<role>-<i>``, per-replica options, resources) and a part of the one ``srun`` line
that starts them all. Arguments and env values are shell-quoted so they reach the program
byte for byte; the job id, unknown until ``sbatch`` answers, is a mark that the script
turns into ``"$SLURM_JOB_ID"``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from torchx.schedulers.api import HELP_KEY, StructuredOpts
from torchx.settings import ENV_TORCHX_ATTEMPT
from torchx.specs.api import AppDef, CfgVal, Resource, Role
from torchx.specs.replica_macros import ReplicaMacros
from torchx.util.startup.lazy_dataclass import dataclass, field
from torchx.util.strings import escape_unprintable
from torchx.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.array_request import SlurmArray
    from torchx.schedulers._slurm.oci import RoleBundle
    from torchx.schedulers._slurm.ssh import SshTarget

__all__ = [
    "SBATCH_GROUP_OPTIONS",
    "SBATCH_JOB_OPTIONS",
    "Opts",
    "SlurmBatchRequest",
    "SlurmOpts",
    "SlurmReplicaRequest",
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
    from shlex import quote  # not at module level: status never quotes

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
    ) -> SlurmReplicaRequest:
        """The request of replica ``name`` (``<role>-<i>``) of an already-substituted role."""
        opts = Opts.from_cfg(cfg)
        gpus_per_node = False
        if role.resource.gpu > 0:
            from torchx.schedulers._slurm.commands import version
            from torchx.schedulers._slurm.ssh import SshTarget

            via = SshTarget.parse(opts.ssh) if opts.ssh else None
            gpus_per_node = version(via) >= GPUS_PER_NODE_SINCE
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
            from shlex import quote

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
        from shlex import quote

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
        from shlex import join

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
        from shlex import join

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
    from torchx.schedulers._slurm.oci import RoleBundle

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
    from torchx.schedulers._slurm import containers
    from torchx.schedulers.ids import current_key
    from torchx.specs.api import macros
    from torchx.specs.sweep import AppArray

    array = app if isinstance(app, AppArray) else None
    idempotency_key = current_key()
    cmd = ["sbatch", "--parsable"]
    for key in SBATCH_JOB_OPTIONS:
        value = opts.get(key)
        if key == "comment" and idempotency_key is not None:
            from torchx.schedulers._slurm.keys import comment_with_key

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
