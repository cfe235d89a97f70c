"""The driver of a TorchX app on Ray: uploaded with every job and run by Ray's job
supervisor inside the cluster (``python .torchx_ray/driver.py``). It imports only ``ray``
and the standard library (TorchX is not installed in the cluster).

It reads the app from ``$TORCHX_RAY_JOB`` (JSON written by the scheduler), reserves one
placement-group bundle per replica (all replicas gang-scheduled), starts one actor per
replica in its bundle and runs the replica's command there with its environment, restarts
replicas as ``max_retries``/``retry_policy`` allow, and exits with the app's result.

Nothing outlives the job and no line is lost: each replica's command is run by a keeper
process (keeper.py) detached from the replica's actor, in a process group of its own;
the keeper copies its output and ends the whole group (SIGTERM, then SIGKILL) when the
command exits and as soon as the actor is gone, however it went (stopped, killed, its
node's memory monitor); and the driver ends its app when the process Ray started it from
is gone (a stop that raced the job's start must not leave it running unseen).

What happens is printed as ``[torchx] {json}`` event lines on the driver's own log, which
the scheduler reads back (``describe``): the actors' output is not forwarded there
(``log_to_driver=False``) but goes to each actor's own log files, one pair per replica,
each line prefixed by its UTC time so that ``torchx log --since/--until`` can filter.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import ray
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

EVENT_PREFIX = "[torchx] "
ENV_JOB = "TORCHX_RAY_JOB"
NAMESPACE = "torchx"
WAIT_NOTE_S = 5.0


def event(kind: str, **fields: Any) -> None:
    print(EVENT_PREFIX + json.dumps({"event": kind, "t": time.time(), **fields}), flush=True)


KEEPER_GRACE_S = 10.0
# The keeper's text (keeper.py, shipped beside this file): the actors run it, and an actor
# is pickled with the values it uses, not with this file's path on the driver's node.
_KEEPER = (Path(__file__).parent / "keeper.py").read_text()


INTERRUPTION_RETRIES = 3
POLL_S = 1.0  # how often the driver looks whether the process that started it is still there


class Orphaned(Exception):
    """The process Ray started the driver from is gone: the job was stopped (or its
    supervisor died) and nobody will end this driver or report on it any more."""


class Parent:
    """The process the driver was started from (Ray's job supervisor), watched by pid."""

    def __init__(self) -> None:
        self.pid = os.getppid()

    def check(self) -> None:
        # re-parented (to init or a subreaper): the supervisor went before a stop reached us
        if self.pid == 1 or os.getppid() != self.pid:
            raise Orphaned


@ray.remote(max_concurrency=2, max_restarts=0)
class Replica:
    """One replica: has its command run by a keeper (keeper.py) and returns its exit status."""

    def __init__(self) -> None:
        self.hold: int | None = None  # the write end of the keeper's hold pipe
        self.lock = threading.Lock()

    def log_files(self) -> dict[str, str]:
        """This actor's node and the names of its stdout/stderr log files there (Ray
        serves files by node and name even after the actor is gone)."""
        files = {"node_id": ray.get_runtime_context().get_node_id()}
        for fd, key in ((1, "out"), (2, "err")):
            try:
                files[key] = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                files[key] = ""
        return files

    def run(self, argv: list[str], env: dict[str, str]) -> int:
        full_env = {k: v for k, v in os.environ.items() if k != ENV_JOB}
        full_env.update(env)
        hold_read, self.hold = os.pipe()
        report_read, report_write = os.pipe()
        keeper = [sys.executable, "-I", "-c", _KEEPER, str(KEEPER_GRACE_S), str(report_write)]
        try:
            subprocess.run(
                [*keeper, *argv],
                env=full_env,
                stdin=hold_read,  # stdout and stderr: this actor's log files
                pass_fds=(report_write,),
                start_new_session=True,
                check=True,  # it returns once the keeper has detached
            )
        finally:
            os.close(hold_read)
            os.close(report_write)
        with open(report_read) as report:
            for line in report:
                kind, _, value = line.partition(" ")
                if kind == "exit":
                    self.stop()
                    return int(value)
        raise RuntimeError("the keeper of the replica's command ended before the command")

    def stop(self) -> None:
        """Lets go of the keeper: it ends the command's process group."""
        with self.lock:
            if self.hold is not None:
                os.close(self.hold)
                self.hold = None


def _bundle(resource: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in resource.items() if v and v > 0}


def _actor_options(resource: dict[str, float], pg: Any, index: int, name: str) -> dict[str, Any]:
    custom = {k: v for k, v in resource.items() if k not in ("CPU", "GPU", "memory") and v > 0}
    options: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "num_cpus": resource.get("CPU", 0) or 0,
        "num_gpus": resource.get("GPU", 0) or 0,
        "resources": custom,
        "scheduling_strategy": PlacementGroupSchedulingStrategy(
            placement_group=pg, placement_group_bundle_index=index
        ),
    }
    if resource.get("memory"):
        options["memory"] = resource["memory"]
    return options


class App:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.parent = Parent()
        self.app_id: str = spec["app_id"]
        self.roles: list[dict[str, Any]] = spec["roles"]
        self.slots = [
            (role_index, replica)
            for role_index, role in enumerate(self.roles)
            for replica in role["replicas"]
        ]
        self.pg: Any = None
        self.node_of_bundle: dict[int, str] = {}
        self.actors: dict[int, Any] = {}
        self.attempts: dict[int, int] = {}  # the slot's attempt number (0 first)
        self.failures: dict[int, int] = {}  # of those, the ones the replica failed itself
        self.interruptions = 0  # replicas lost with their actor (node gone, killed)

    def reserve(self) -> bool:
        bundles = [_bundle(self.roles[r]["resource"]) or {"CPU": 0.001} for r, _ in self.slots]
        self.pg = placement_group(bundles, strategy=self.spec.get("strategy", "SPREAD"))
        event("waiting", bundles=bundles, strategy=self.spec.get("strategy", "SPREAD"))
        timeout = float(self.spec.get("placement_timeout_s") or 0)
        started = time.monotonic()
        noted = False
        while True:
            ready, _ = ray.wait([self.pg.ready()], timeout=POLL_S)
            if ready:
                break
            self.parent.check()
            if not noted and time.monotonic() - started >= WAIT_NOTE_S:
                event(
                    "pending",
                    bundles=bundles,
                    cluster=ray.cluster_resources(),
                    available=ray.available_resources(),
                )
                noted = True
            if timeout and time.monotonic() - started > timeout:
                event("unplaceable", bundles=bundles, cluster=ray.cluster_resources())
                return False
        table = ray.util.placement_group_table(self.pg)
        ips = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes()}
        for index, node_id in table.get("bundles_to_node_id", {}).items():
            self.node_of_bundle[int(index)] = ips.get(node_id, "")
        return True

    def start(self, slot: int) -> Any:
        role_index, replica = self.slots[slot]
        role = self.roles[role_index]
        attempt = self.attempts.get(slot, 0)
        name = f"{self.app_id}/{role['name']}/{replica['id']}/{attempt}"
        options = _actor_options(role["resource"], self.pg, slot, name)
        actor = Replica.options(**options).remote()  # type: ignore[attr-defined]
        env = dict(replica["env"])
        env["TORCHX_ATTEMPT"] = str(attempt)  # torchx.settings.ENV_TORCHX_ATTEMPT (only ray here)
        # The replica in bundle 0 hosts the rendezvous (torchrun's c10d store): it sees
        # itself as "localhost", which torchrun always recognises as this host; every other
        # replica gets the IP of bundle 0's node.
        env[self.spec["rank0_env"]] = "localhost" if slot == 0 else self.node_of_bundle.get(0, "")
        try:
            files = ray.get(actor.log_files.remote(), timeout=60)
        except Exception:  # the logs are then read by actor id
            files = {}
        ref = actor.run.remote(replica["argv"], env)
        self.actors[slot] = actor
        event(
            "running",
            role=role["name"],
            replica=replica["id"],
            attempt=attempt,
            actor_id=actor._actor_id.hex(),
            host=self.node_of_bundle.get(slot, ""),
            **{f"log_{k}": v for k, v in files.items()},
        )
        return ref

    def stop(self, slots: list[int]) -> None:
        for slot in slots:
            actor = self.actors.pop(slot, None)
            if actor is not None:
                # an actor that already died cannot be asked: its death set its keeper off
                with contextlib.suppress(Exception):
                    ray.get(actor.stop.remote(), timeout=10)
                ray.kill(actor)

    def run(self) -> int:
        if not self.reserve():
            return 3
        running = {self.start(slot): slot for slot in range(len(self.slots))}
        result = 0
        while running:
            done, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
            if not done:
                self.parent.check()
                continue
            slot = running.pop(done[0])
            role_index, replica = self.slots[slot]
            role = self.roles[role_index]
            lost = False
            try:
                code = int(ray.get(done[0]))
            except Exception as e:  # the actor died (node lost, killed)
                code, lost = 137, True
                event("lost", role=role["name"], replica=replica["id"], error=str(e)[:300])
            event("exited", role=role["name"], replica=replica["id"], code=code)
            self.stop([slot])
            if code == 0:
                continue
            group = self._retry_group(slot, lost)
            if group:
                others = [s for s in group if s != slot]
                for ref, s in list(running.items()):
                    if s in others:
                        running.pop(ref)
                self.stop(others)
                for s in group:
                    self.attempts[s] = self.attempts.get(s, 0) + 1
                    running[self.start(s)] = s
                event(
                    "restarted", role=role["name"], replicas=[self.slots[s][1]["id"] for s in group]
                )
                continue
            result = code
            self.stop_all(list(running.values()))
            running.clear()
        return result

    def stop_all(self, slots: list[int]) -> None:
        """Stops the replicas of ``slots`` that still run, each reported ``stopped``."""
        self.stop(slots)
        for s in slots:
            r, rep = self.slots[s]
            event("stopped", role=self.roles[r]["name"], replica=rep["id"])

    def _retry_group(self, slot: int, lost: bool) -> list[int]:
        """The slots to restart after ``slot`` ended badly (empty: no retries left).

        A replica lost with its actor (its node gone, the actor killed) was interrupted:
        restarted without spending ``max_retries``, up to ``INTERRUPTION_RETRIES`` times
        for the app (Ray's memory monitor kills the actors of a replica that would only
        grow again). Its own failure spends the role's ``max_retries``."""
        role_index, _ = self.slots[slot]
        role = self.roles[role_index]
        if lost and self.interruptions < INTERRUPTION_RETRIES:
            self.interruptions += 1
        elif self.failures.get(slot, 0) < int(role.get("max_retries", 0)):
            self.failures[slot] = self.failures.get(slot, 0) + 1
        else:
            return []
        policy = role.get("retry_policy", "APPLICATION")
        if policy == "REPLICA":
            return [slot]
        if policy == "ROLE":
            return [s for s, (r, _) in enumerate(self.slots) if r == role_index]
        return list(range(len(self.slots)))


@ray.remote(num_cpus=0)
class Gate:
    """A sweep's ``max_parallel``: ``permits`` elements run at once; it ends itself once
    each of the sweep's ``total`` drivers said it is done."""

    def __init__(self, permits: int, total: int) -> None:
        self.free = permits
        self.left = total

    def acquire(self) -> bool:
        if self.free <= 0:
            return False
        self.free -= 1
        return True

    def done(self, held: bool) -> None:
        self.free += 1 if held else 0
        self.left -= 1
        if self.left <= 0:
            ray.actor.exit_actor()


def gate_of(spec: dict[str, Any]) -> Any:
    """The sweep's gate, made by whichever of its drivers comes first."""
    return Gate.options(  # type: ignore[attr-defined]
        name=spec["name"], namespace=NAMESPACE, lifetime="detached", get_if_exists=True
    ).remote(int(spec["permits"]), int(spec["total"]))


def take_turn(app: App, gate: Any, permits: int) -> None:
    """Waits for a permit of the sweep's gate."""
    noted = False
    while not ray.get(gate.acquire.remote()):
        if not noted:
            event("waiting_turn", permits=permits)
            noted = True
        app.parent.check()
        time.sleep(POLL_S)


def main() -> int:
    app = App(json.loads(os.environ[ENV_JOB]))
    ray.init(log_to_driver=False, namespace=NAMESPACE)
    event("started", app_id=app.app_id, replicas=len(app.slots))
    gate, held = None, False
    try:
        if app.spec.get("gate"):  # an element of a sweep run K at a time
            gate = gate_of(app.spec["gate"])
            take_turn(app, gate, int(app.spec["gate"]["permits"]))
            held = True
        code = app.run()
    except Orphaned:
        event("orphaned")
        app.stop_all(list(app.actors))
        code = 143
    finally:
        if app.pg is not None:
            remove_placement_group(app.pg)
        if gate is not None:
            with contextlib.suppress(Exception):
                ray.get(gate.done.remote(held), timeout=10)
    event("finished", code=code)
    return code


if __name__ == "__main__":
    sys.exit(main())
