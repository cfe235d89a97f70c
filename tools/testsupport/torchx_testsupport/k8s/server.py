"""The stand-in server: its state, injected faults, kubeconfig and what tests change by hand
(pods' phases, their logs)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any

from torchx_testsupport.k8s.api import RestApi
from torchx_testsupport.k8s.controllers import Controllers
from torchx_testsupport.k8s.http import _Handler
from torchx_testsupport.k8s.injector import FaultInjector
from torchx_testsupport.k8s.objects import (
    TOKEN,
    _now,
    matches,
    parse_selector,
)


class FakeKubernetes(FaultInjector, Controllers, RestApi):
    """The stand-in server and its controllers (see the module docstring)."""

    def __init__(
        self,
        *,
        volcano: bool = True,
        namespaces: Iterable[str] = ("default", "team"),
        queues: Iterable[str] = ("default",),
    ) -> None:
        FaultInjector.__init__(self)
        self.volcano = volcano
        self.namespaces = set(namespaces)
        self.queues = set(queues)
        self.store: dict[str, dict[tuple[str, str], dict[str, Any]]] = {
            "vcjobs": {},
            "jobs": {},
            "services": {},
            "pods": {},
        }
        self.logs: dict[tuple[str, str, str], list[tuple[float, bytes]]] = {}
        self.log_done: set[tuple[str, str, str]] = set()
        self.partial: dict[tuple[str, str, str], bytes] = {}
        self.forbidden: set[tuple[str, str]] = set()
        self._ip = 10
        self.revision = 0
        self._rv_of: dict[tuple[str, str, str], int] = {}
        self.events: list[tuple[int, str, str, str, dict[str, Any]]] = []
        """(revision, kind, namespace, event type, object) of every change, in order."""
        self.delivered: list[tuple[str, dict[str, Any]]] = []
        """(event type, object) of every event a watch has sent."""
        self._seen: dict[tuple[str, str, str], str] = {}

    # -- lifecycle of the server ------------------------------------------------------------

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"fake": self})

    def stop(self) -> None:
        with self.cond:
            for key in self.logs:
                self.log_done.add(key)
            self.cond.notify_all()
        super().stop()

    def write_kubeconfig(
        self, path: str, *, namespace: str | None = None, token: str = TOKEN
    ) -> str:
        return self._write_kubeconfig(
            path, name="fake", user="tester", token=token, namespace=namespace
        )

    def forbid(self, verb: str, resource: str) -> None:
        """Answer 403 to ``verb`` (create/get/list/watch/update/patch/delete) on ``resource``."""
        self.forbidden.add((verb, resource))

    def _changed(self) -> None:
        """Stamps changed objects with new resource versions, logs the events, wakes waiters.

        Called (holding ``cond``) after every mutation; compares each object's content
        with what was last stamped, so no mutation site has to say what it changed.
        """
        current: dict[tuple[str, str, str], dict[str, Any]] = {
            (kind, ns, name): obj
            for kind, objects in self.store.items()
            for (ns, name), obj in objects.items()
        }
        for key, obj in current.items():
            meta = obj["metadata"]
            meta.pop("resourceVersion", None)
            content = json.dumps(obj, sort_keys=True)
            if self._seen.get(key) == content:
                meta["resourceVersion"] = str(self._rv_of.get(key, 0))
                continue
            kind_ = "ADDED" if key not in self._seen else "MODIFIED"
            self._seen[key] = content
            self.revision += 1
            self._rv_of[key] = self.revision
            meta["resourceVersion"] = str(self.revision)
            self.events.append((self.revision, key[0], key[1], kind_, json.loads(json.dumps(obj))))
        for key in [k for k in self._seen if k not in current]:
            gone = json.loads(self._seen.pop(key))  # the object as it was last seen
            self.revision += 1
            gone["metadata"]["resourceVersion"] = str(self.revision)
            self.events.append((self.revision, key[0], key[1], "DELETED", gone))
        self.cond.notify_all()

    def pods(self, ns: str = "default", selector: str = "") -> list[dict[str, Any]]:
        terms = parse_selector(selector)
        with self.cond:
            return [
                json.loads(json.dumps(p))
                for (pns, _), p in sorted(self.store["pods"].items())
                if pns == ns and matches(p, terms)
            ]

    def pod_names(self, ns: str = "default", selector: str = "") -> list[str]:
        return [p["metadata"]["name"] for p in self.pods(ns, selector)]

    def set_pod(
        self,
        ns: str,
        name: str,
        phase: str,
        *,
        exit_code: int | None = None,
        reason: str | None = None,
        message: str | None = None,
        unschedulable: str | None = None,
        waiting: tuple[str, str] | None = None,
    ) -> None:
        """Moves a pod to ``phase`` as the scheduler/kubelet would, then reconciles."""
        with self.cond:
            pod = self.store["pods"][(ns, name)]
            status = pod.setdefault("status", {})
            status["phase"] = phase
            containers = [c["name"] for c in pod["spec"]["containers"]]
            if unschedulable is not None:
                status["conditions"] = [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": unschedulable,
                    }
                ]
            elif phase != "Pending" or waiting is not None:
                status["conditions"] = [{"type": "PodScheduled", "status": "True"}]
                self._ip += 1
                status["podIP"] = f"10.0.0.{self._ip}"
            if waiting is not None:
                status["containerStatuses"] = [
                    {"name": c, "state": {"waiting": {"reason": waiting[0], "message": waiting[1]}}}
                    for c in containers
                ]
            elif phase == "Running":
                status["containerStatuses"] = [
                    {"name": c, "state": {"running": {"startedAt": _now()}}} for c in containers
                ]
            elif phase in ("Succeeded", "Failed"):
                code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
                terminated: dict[str, Any] = {
                    "exitCode": code,
                    "reason": reason or ("Completed" if code == 0 else "Error"),
                }
                if message:
                    terminated["message"] = message
                status["containerStatuses"] = [
                    {"name": c, "state": {"terminated": terminated}} for c in containers
                ]
                for c in containers:
                    self.log_done.add((ns, name, c))
            self._reconcile()
            self._changed()

    def set_all(self, ns: str, selector: str, phase: str, **kw: Any) -> None:
        for name in self.pod_names(ns, selector):
            self.set_pod(ns, name, phase, **kw)

    def log(
        self, ns: str, pod: str, text: str, container: str | None = None, at: float | None = None
    ) -> None:
        """Appends ``text`` to a container's log (the pod's first container by default)."""
        with self.cond:
            if container is None:
                container = self.store["pods"][(ns, pod)]["spec"]["containers"][0]["name"]
            # The runtime stamps whole lines; a partial write waits for its newline.
            key = (ns, pod, container)
            pending = self.partial.pop(key, b"") + text.encode()
            *lines, rest = pending.split(b"\n")
            stamp = time.time() if at is None else at
            self.logs.setdefault(key, []).extend((stamp, line + b"\n") for line in lines)
            if rest:
                self.partial[key] = rest
            self.cond.notify_all()

    def end_log(self, ns: str, pod: str, container: str | None = None) -> None:
        with self.cond:
            names = [c["name"] for c in self.store["pods"][(ns, pod)]["spec"]["containers"]]
            for name in [container] if container else names:
                self.log_done.add((ns, pod, name))
