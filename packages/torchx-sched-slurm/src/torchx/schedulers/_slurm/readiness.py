"""``torchx check`` probes of the ``slurm`` scheduler: Slurm's client commands on this
host, the controller, the partitions a job could go to, and the accounting that keeps
finished jobs visible, and what the ``container`` run option can use. Read-only:
``scontrol ping``, ``sinfo``, ``sacct`` and ``srun --help`` only."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

from torchx.schedulers._slurm.commands import first_error_line
from torchx.schedulers._slurm.oci import missing_tools, missing_tools_message
from torchx.schedulers._slurm.ssh import remote_command, ssh_argv, ssh_error
from torchx.util.readiness import (
    ReadinessCheck,
    not_configured,
    not_ready,
    probe,
    ready,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers._slurm.ssh import SshTarget

TIMEOUT_S = 3.0
SSH_TIMEOUT_S = 20.0  # a first command over ssh also logs in
_COMMANDS = ("sbatch", "squeue", "scontrol", "sinfo", "sacct", "scancel")
_CONF_FIX = (
    "start slurmctld, or give this host Slurm's configuration (/etc/slurm/slurm.conf, or"
    " SLURM_CONF)"
)


def _run(*argv: str, via: SshTarget | None = None) -> tuple[int, str, str]:
    timeout = TIMEOUT_S
    command = list(argv)
    if via is not None:  # on the login node; the first command also opens the connection
        command = ssh_argv(via, remote_command(command))
        timeout = SSH_TIMEOUT_S
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]}: no answer within {timeout:g} s"
    return proc.returncode, proc.stdout, proc.stderr


def ssh_check(via: SshTarget) -> ReadinessCheck:
    """The login node answers over ssh, in batch mode (no prompt)."""

    code, _, err = _run("echo", "connected", via=via)  # a builtin of every shell
    if code != 0:
        found, _, fix = str(ssh_error(via, err)).rpartition("; ")
        return not_ready("ssh", found, fix)
    return ready("ssh", f"{via.command}: connected in batch mode (one shared connection)")


def commands_check(via: SshTarget | None = None) -> ReadinessCheck:
    if via is not None:
        # `command -v` is a shell builtin (one name at a time in dash): it works where
        # PATH finds nothing
        script = 'for c in "$@"; do command -v "$c"; done'
        _, out, _ = _run("sh", "-c", script, "sh", *_COMMANDS, via=via)
        found = {os.path.basename(line.strip()) for line in out.splitlines()}
        missing = [c for c in _COMMANDS if c not in found]
        if missing:
            return not_ready(
                "commands",
                f"missing on {via.host}'s PATH (over ssh): {', '.join(missing)}",
                "install Slurm's client tools there, or add their directory to PATH in"
                " ~/.bashrc there",
            )
        return ready("commands", f"{', '.join(_COMMANDS)} on {via.host}'s PATH")
    missing = [c for c in _COMMANDS if shutil.which(c) is None]
    if len(missing) == len(_COMMANDS):
        return not_configured(
            "commands",
            "Slurm's client commands are not installed on this host",
            "run torchx on a Slurm login node, or install Slurm's client tools (slurm-client)",
        )
    if missing:
        return not_ready(
            "commands",
            f"missing on PATH: {', '.join(missing)}",
            "install Slurm's full client tools (slurm-client), or fix PATH",
        )
    return ready("commands", f"{', '.join(_COMMANDS)} on PATH ({shutil.which('sbatch')})")


def controller_check(via: SshTarget | None = None) -> ReadinessCheck:
    code, out, err = _run("scontrol", "ping", via=via)
    text = " ".join(out.split())
    text = text.split("*", 1)[0].strip()  # drop the "** RESTORE SLURMCTLD **" banner
    if code == 0 and "is UP" in text:
        return ready("controller", text)
    return not_ready("controller", text or first_error_line(err), _CONF_FIX)


def partitions_check(partition: str | None, via: SshTarget | None = None) -> ReadinessCheck:
    code, out, err = _run("sinfo", "-h", "-o", "%P|%a|%D|%t", via=via)
    if code != 0:
        return not_ready("partitions", first_error_line(err), _CONF_FIX)
    states: dict[str, tuple[str, int, set[str]]] = {}
    for line in out.splitlines():
        name, avail, nodes, state = [*line.split("|"), "", "", "", ""][:4]
        default = name.endswith("*")
        key = name.rstrip("*") + ("*" if default else "")
        _, count, seen = states.get(key, (avail, 0, set()))
        states[key] = (avail, count + int(nodes or 0), seen | {state})
    shown = [
        f"{name} ({avail}, {count} nodes: {'/'.join(sorted(seen))})"
        for name, (avail, count, seen) in sorted(states.items())
    ]
    usable = [
        n
        for n, (avail, _, seen) in states.items()
        if avail == "up" and seen - {"down", "drain", "down*", "drng"}
    ]
    if partition:
        names = {n.rstrip("*") for n in states}
        if partition not in names:
            return not_ready(
                "partitions",
                f"partition {partition!r} (run option) does not exist; found: {', '.join(shown)}",
                f"set -cfg partition= (or [slurm] partition) to one of {', '.join(sorted(names))}",
            )
        usable = [n for n in usable if n.rstrip("*") == partition]
    if not usable:
        return not_ready(
            "partitions",
            f"no partition is up with usable nodes: {', '.join(shown) or 'none'}",
            "ask the cluster's admin to resume the nodes"
            " (`scontrol update nodename=... state=resume`)",
        )
    return ready("partitions", ", ".join(shown))


def accounting_check(via: SshTarget | None = None) -> ReadinessCheck:
    code, _, err = _run("sacct", "-n", "-X", "-o", "JobID", "-S", "now-1hours", via=via)
    if code == 0:
        return ready("accounting", "sacct answers: finished jobs stay visible to status/log/list")
    return not_ready(
        "accounting",
        first_error_line(err),
        "start slurmdbd (and its database), or configure accounting"
        " (AccountingStorageType=accounting_storage/slurmdbd) so finished jobs can be looked up",
    )


def _oci_conf() -> str | None:
    """Where this host's ``oci.conf`` is (beside ``slurm.conf``), if it has one."""
    conf = os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
    path = os.path.join(os.path.dirname(conf), "oci.conf")
    return path if os.path.isfile(path) else None


def containers_check(container: str, via: SshTarget | None = None) -> ReadinessCheck:
    """What the ``container`` run option can use: Slurm's OCI support (``srun
    --container``, oci.conf, skopeo and umoci here) and pyxis (``--container-image``);
    a problem only for the mode asked for (``-cfg container=...``)."""

    code, out, err = _run("srun", "--help", via=via)
    if code != 0:
        return not_ready("containers", f"srun --help: {first_error_line(err)}", _CONF_FIX)
    words = set(out.replace("=", " ").split())
    oci_conf = _oci_conf()
    missing = missing_tools()
    if via is not None:  # the bundles are made on the submitting host: not over ssh
        oci = "oci: not over ssh (the images are unpacked on the submitting host)"
    elif "--container" not in words:
        oci = "oci: this Slurm's srun has no --container (Slurm 21.08 or later has it)"
    else:
        oci = "oci: srun --container, " + (
            f"{oci_conf}" if oci_conf else "no oci.conf on this host (the nodes need one)"
        )
        oci += f", {'missing ' + ' and '.join(missing) if missing else 'skopeo and umoci'} here"
    pyxis_found = "--container-image" in words
    pyxis = "pyxis: " + (
        "srun --container-image" if pyxis_found else "not installed (no --container-image)"
    )
    found = f"{oci}; {pyxis}"
    if container == "oci" and via is not None:
        return not_ready(
            "containers", found, "use -cfg container=pyxis, or submit on the login node"
        )
    if container == "oci" and "--container" not in words:
        return not_ready(
            "containers", found, "use a Slurm of 21.08 or later, or -cfg container=pyxis"
        )
    if container == "oci" and missing:
        return not_ready("containers", found, missing_tools_message(missing))
    if container == "oci" and oci_conf is None:
        return ready("containers", found + " (oci.conf: ask the admin whether the nodes have it)")
    if container == "pyxis" and not pyxis_found:
        return not_ready(
            "containers",
            found,
            "ask the cluster's admin to install pyxis and enroot, or use -cfg container=oci",
        )
    return ready("containers", found)


def checks(
    partition: str | None, container: str = "none", via: SshTarget | None = None
) -> list[ReadinessCheck]:
    """The commands first (without them nothing else can be asked); then the controller
    and, beside it, the accounting (another daemon); the partitions only when the
    controller is up (``sinfo`` would otherwise retry for a long time)."""

    fix = "see `torchx --log_level DEBUG check -s slurm`"
    first = []
    if via is not None:  # nothing else can be asked without the login node
        connection = probe("ssh", lambda: ssh_check(via), fix)
        if connection.status != "ready":
            return [connection]
        first.append(connection)
    commands = probe("commands", lambda: commands_check(via), fix)
    if commands.status == "not configured" or (via is not None and commands.status != "ready"):
        return [*first, commands]  # nothing else answers without them
    accounting: list[ReadinessCheck] = []
    beside = threading.Thread(
        target=lambda: accounting.append(probe("accounting", lambda: accounting_check(via), fix)),
        daemon=True,
    )
    beside.start()
    controller = probe("controller", lambda: controller_check(via), fix)
    checks = [*first, commands, controller]
    if controller.status == "ready":
        checks.append(probe("partitions", lambda: partitions_check(partition, via), fix))
    checks.append(probe("containers", lambda: containers_check(container, via), fix))
    beside.join((SSH_TIMEOUT_S if via is not None else TIMEOUT_S) + 1)
    checks += accounting or [
        not_ready("accounting", f"sacct: no answer within {TIMEOUT_S:g} s", _CONF_FIX)
    ]
    return checks
