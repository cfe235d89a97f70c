"""A Kubernetes API server stand-in for the ``kubernetes`` scheduler's tests.

No real API server can run on the test machines, so the tests drive the real
``kubernetes`` Python client against this HTTP server on localhost. It speaks the REST API
for the calls the scheduler makes (create with ``dryRun``, get, list with label selectors,
status replace, patch, delete, delete collection, pod logs with follow), requires the
bearer token of its kubeconfig, and plays the controllers:

* Volcano: a created Job gets one Pending pod per task; the Job's phase follows its pods
  (Pending, Running, Completed, Failed, Restarting with ``maxRetry``); a status replace to
  ``Aborted`` deletes the live pods. Its admission checks the queue and pod name lengths.
* the Job controller: an Indexed Job gets one pod per index (none while suspended);
  failed pods are replaced until ``backoffLimit``; ``suspend`` deletes the active pods;
  ``Complete``/``Failed``/``Suspended`` conditions; deleting a Job without
  ``propagationPolicy`` orphans its pods, as the real API does.

Every object body is checked by deserialising it into the client's own models (``V1Pod``
for each Volcano task template, ``V1Job``, ``V1Service``) and serialising it back: a field
the model does not know, a wrong type or a bad name is answered with 422 like the real
server. Tests move pods with :meth:`FakeKubernetes.set_pod` and write logs with
:meth:`FakeKubernetes.log`.

Every change of a stored object gives it a new ``metadata.resourceVersion`` (one counter
for the server, as etcd's revision) and is kept as a watch event; lists carry the
revision they were read at, and ``?watch=true`` lists stream the ADDED/MODIFIED/DELETED
events after ``resourceVersion`` (all objects as ADDED without one), filtered by label
and ``metadata.name`` field selectors, until ``timeoutSeconds``.

Faults are injected with :meth:`FakeKubernetes.inject`: the next matching requests are
answered 429 (with ``Retry-After``), 500 or 503, have their connection closed with no
answer, are answered slowly, have their watch or followed log cut after the first write,
or have their watch ended by a ``410 Expired`` ERROR event (a resource version too old).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

VOLCANO = "/apis/batch.volcano.sh/v1alpha1"
REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
TOKEN = "torchx-test-token"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def _now() -> str:
    """A timestamp as the API server writes ``creationTimestamp``: whole seconds."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _diff(sent: Any, back: Any, path: str = "") -> str | None:
    """The path of the first difference between a body and its model round trip."""
    if isinstance(sent, dict) and isinstance(back, dict):
        for key, value in sent.items():
            if value is None:
                continue
            if key not in back:
                return f"{path}.{key}"
            found = _diff(value, back[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(sent, list) and isinstance(back, list):
        if len(sent) != len(back):
            return path
        for i, (a, b) in enumerate(zip(sent, back, strict=True)):
            found = _diff(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if sent == back else path


def check_model(body: dict[str, Any], klass: str, what: str) -> None:
    """Raises a 422 unless ``body`` deserialises into the client model ``klass`` unchanged."""
    import kubernetes.client

    from torchx.schedulers.kubernetes_scheduler import _to_model

    k8s: Any = kubernetes.client
    try:
        model = _to_model(body, klass)
    except Exception as e:
        raise ApiError(422, "Invalid", f"{what}: {' '.join(str(e).split())[:300]}") from e
    back = k8s.ApiClient().sanitize_for_serialization(model)
    where = _diff(body, back)
    if where is not None:
        raise ApiError(422, "Invalid", f"{what}: unknown or malformed field {where.lstrip('.')}")


def _check_labels(meta: dict[str, Any], what: str) -> None:
    for value in (meta.get("labels") or {}).values():
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            raise ApiError(422, "Invalid", f"{what}: metadata.labels: Invalid value: {value!r}")


def check_pod_spec(template: dict[str, Any], what: str) -> None:
    _check_labels(template.get("metadata") or {}, what)
    spec = template.get("spec") or {}
    if not spec.get("containers"):
        raise ApiError(422, "Invalid", f"{what}: spec.containers: Required value")
    for container in spec["containers"]:
        name = container.get("name") or ""
        if not _DNS_LABEL.match(name):
            raise ApiError(
                422,
                "Invalid",
                f"{what}: spec.containers.name: Invalid value: {name!r}: a"
                " lowercase RFC 1123 label must consist of lower case alphanumeric characters",
            )
        for kind in ("limits", "requests"):
            for res, qty in ((container.get("resources") or {}).get(kind) or {}).items():
                if not _QUANTITY.match(str(qty)):
                    raise ApiError(
                        422, "Invalid", f"{what}: resources.{kind}[{res}]: Invalid value: {qty!r}"
                    )
    for toleration in spec.get("tolerations") or ():
        effect = toleration.get("effect")
        if effect not in (None, "NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ApiError(422, "Invalid", f"{what}: tolerations.effect: Unsupported {effect!r}")


def parse_selector(selector: str) -> list[tuple[str, str, str | None]]:
    terms: list[tuple[str, str, str | None]] = []
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            terms.append((key, "!=", value))
        elif "=" in term:
            key, value = term.split("=", 1)
            terms.append((key, "=", value.lstrip("=")))
        else:
            terms.append((term, "exists", None))
    return terms


def matches(obj: dict[str, Any], terms: Iterable[tuple[str, str, str | None]]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for key, op, value in terms:
        if op == "exists" and key not in labels:
            return False
        if op == "=" and labels.get(key) != value:
            return False
        if op == "!=" and labels.get(key) == value:
            return False
    return True


FAULTS = ("429", "500", "503", "reset", "slow", "drop", "end", "split", "gone")
"""What ``inject`` plays: an error answer (429, 500, 503), a reset connection, a slow
answer; on a followed log or a watch, once the first new entries went out: the connection
dropped (``drop``), dropped inside a line (``split``), or the stream ended in good order
while the container runs, as an API server or kubelet restart ends it (``end``); on a
watch, 410 Gone."""


class _Fault:
    def __init__(self, kind: str, on: str, times: int, delay_s: float, after: int) -> None:
        self.kind, self.on, self.times, self.delay_s = kind, on, times, delay_s
        self.after = after


class FakeKubernetes:
    """The stand-in server and its controllers (see the module docstring)."""

    def __init__(
        self,
        *,
        volcano: bool = True,
        namespaces: Iterable[str] = ("default", "team"),
        queues: Iterable[str] = ("default",),
    ) -> None:
        self.volcano = volcano
        self.namespaces = set(namespaces)
        self.queues = set(queues)
        self.cond = threading.Condition()
        self.store: dict[str, dict[tuple[str, str], dict[str, Any]]] = {
            "vcjobs": {},
            "jobs": {},
            "services": {},
            "pods": {},
        }
        self.logs: dict[tuple[str, str, str], list[tuple[float, bytes]]] = {}
        self.log_done: set[tuple[str, str, str]] = set()
        self.partial: dict[tuple[str, str, str], bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.forbidden: set[tuple[str, str]] = set()
        self._server: ThreadingHTTPServer | None = None
        self._ip = 10
        self.revision = 0
        self._rv_of: dict[tuple[str, str, str], int] = {}
        self.events: list[tuple[int, str, str, str, dict[str, Any]]] = []
        """(revision, kind, namespace, event type, object) of every change, in order."""
        self.delivered: list[tuple[str, dict[str, Any]]] = []
        """(event type, object) of every event a watch has sent."""
        self._seen: dict[tuple[str, str, str], str] = {}
        self._faults: list[_Fault] = []
        self.faults_met: list[tuple[str, str, str]] = []
        """(fault, method, path) of every fault a request met, in order."""

    # -- faults ------------------------------------------------------------------------------

    def inject(
        self, fault: str, *, on: str = "", times: int = 1, delay_s: float = 2.0, after: int = 0
    ) -> None:
        """The next ``times`` requests whose ``"METHOD path?query"`` (``WATCH`` for
        watches, ``LOG`` for followed logs) matches the regex ``on`` meet ``fault``, one
        of :data:`FAULTS`, once ``after`` such requests have gone through."""
        assert fault in FAULTS, fault
        with self.cond:
            self._faults.append(_Fault(fault, on, times, delay_s, after))

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        with self.cond:
            for fault in self._faults:
                if fault.times > 0 and re.search(fault.on, f"{method} {path}"):
                    if fault.after > 0:
                        fault.after -= 1
                        continue
                    fault.times -= 1
                    self.faults_met.append((fault.kind, method, path))
                    return fault
            return None

    # -- lifecycle of the server ------------------------------------------------------------

    def start(self) -> FakeKubernetes:
        cluster = self

        class Handler(_Handler):
            fake = cluster

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        with self.cond:
            for key in self.logs:
                self.log_done.add(key)
            self.cond.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def write_kubeconfig(
        self, path: str, *, namespace: str | None = None, token: str = TOKEN
    ) -> str:
        context: dict[str, Any] = {"cluster": "fake", "user": "tester"}
        if namespace:
            context["namespace"] = namespace
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": context}],
            "current-context": "fake",
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(config, f)
        return path

    def calls(self) -> int:
        with self.cond:
            return len(self.requests)

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

    def watches(self) -> int:
        """How many watch requests the server has answered or is answering."""
        return self.count_requests(_is_watch)

    def count_requests(self, predicate: Callable[[str, str], bool]) -> int:
        """How many requests ``(method, path)`` satisfy ``predicate`` (``WATCH`` for watches)."""
        with self.cond:
            return sum(1 for method, path in self.requests if predicate(method, path))

    def wait_for_request(
        self, predicate: Callable[[str, str], bool], timeout: float = 30, after: int = 0
    ) -> bool:
        """Waits until more than ``after`` requests ``(method, path)`` satisfy ``predicate``
        (a request counts once it has come in, before it is answered)."""
        with self.cond:
            return self.cond.wait_for(lambda: self.count_requests(predicate) > after, timeout)

    def wait_for_watch(self, after: int, timeout: float = 30) -> bool:
        """Waits until more than ``after`` watch requests have come in."""
        return self.wait_for_request(_is_watch, timeout, after)

    # -- controller helpers used by the tests ------------------------------------------------

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
            self.cond.notify_all()

    # -- the controllers ------------------------------------------------------------------

    def _new_pod(  # noqa: PLR0917
        self,
        ns: str,
        name: str,
        template: dict[str, Any],
        labels: dict[str, str],
        annotations: dict[str, str] | None = None,
        owner: str = "",
    ) -> None:
        meta = json.loads(json.dumps(template.get("metadata") or {}))
        meta.update(name=name, namespace=ns, creationTimestamp=_now(), uid=secrets.token_hex(8))
        meta.setdefault("labels", {}).update(labels)
        if annotations:
            meta.setdefault("annotations", {}).update(annotations)
        meta["ownerReferences"] = [{"name": owner}]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": json.loads(json.dumps(template.get("spec") or {})),
            "status": {"phase": "Pending"},
        }
        self.store["pods"][(ns, name)] = pod

    def _owned_pods(self, ns: str, owner: str) -> list[dict[str, Any]]:
        return [
            p
            for (pns, _), p in self.store["pods"].items()
            if pns == ns and p["metadata"]["ownerReferences"][0]["name"] == owner
        ]

    def _delete_pods(self, pods: Iterable[dict[str, Any]]) -> None:
        for pod in list(pods):
            meta = pod["metadata"]
            self.store["pods"].pop((meta["namespace"], meta["name"]), None)
            for c in pod["spec"]["containers"]:
                self.log_done.add((meta["namespace"], meta["name"], c["name"]))

    def _start_volcano(self, ns: str, job: dict[str, Any]) -> None:
        name = job["metadata"]["name"]
        for task in job["spec"]["tasks"]:
            for i in range(int(task.get("replicas", 1))):
                pod = f"{name}-{task['name']}-{i}"
                self._new_pod(
                    ns,
                    pod,
                    task["template"],
                    {"volcano.sh/job-name": name, "volcano.sh/task-spec": task["name"]},
                    owner=name,
                )

    def _start_index(self, ns: str, job: dict[str, Any], index: int) -> None:
        name = job["metadata"]["name"]
        idx = {"batch.kubernetes.io/job-completion-index": str(index)}
        self._new_pod(
            ns,
            f"{name}-{index}-{secrets.token_hex(3)[:5]}",
            job["spec"]["template"],
            {"job-name": name, "batch.kubernetes.io/job-name": name, **idx},
            annotations=idx,
            owner=name,
        )

    def _reconcile(self) -> None:
        for (ns, name), job in self.store["vcjobs"].items():
            self._reconcile_volcano(ns, name, job)
        for (ns, name), job in self.store["jobs"].items():
            self._reconcile_job(ns, name, job)

    def _reconcile_volcano(self, ns: str, name: str, job: dict[str, Any]) -> None:
        state = job.setdefault("status", {}).setdefault("state", {})
        if state.get("phase") in ("Aborted", "Completed", "Failed"):
            return
        pods = self._owned_pods(ns, name)
        phases = [p["status"]["phase"] for p in pods]
        counts: dict[str, dict[str, dict[str, int]]] = {}
        for p in pods:
            task = p["metadata"]["labels"]["volcano.sh/task-spec"]
            phase_counts = counts.setdefault(task, {"phase": {}})["phase"]
            phase_counts[p["status"]["phase"]] = phase_counts.get(p["status"]["phase"], 0) + 1
        job["status"]["taskStatusCount"] = counts
        if "Failed" in phases:
            retries = int(job["status"].get("retryCount", 0))
            if retries < int(job["spec"].get("maxRetry", 0)):
                job["status"]["retryCount"] = retries + 1
                self._delete_pods(pods)
                self._start_volcano(ns, job)
                state["phase"] = "Restarting"
            else:
                state["phase"] = "Failed"
        elif phases and all(p == "Succeeded" for p in phases):
            state["phase"] = "Completed"
        elif "Running" in phases:
            state["phase"] = "Running"
        else:
            state["phase"] = "Pending"

    def _reconcile_job(self, ns: str, name: str, job: dict[str, Any]) -> None:
        spec, status = job["spec"], job.setdefault("status", {})
        conditions = status.setdefault("conditions", [])
        if any(c["type"] in ("Complete", "Failed") for c in conditions):
            return
        pods = self._owned_pods(ns, name)
        if spec.get("suspend"):
            self._delete_pods(p for p in pods if p["status"]["phase"] in ("Pending", "Running"))
            if not any(c["type"] == "Suspended" for c in conditions):
                conditions.append({"type": "Suspended", "status": "True", "reason": "JobSuspended"})
            status.update(active=0, ready=0)
            return
        conditions[:] = [c for c in conditions if c["type"] != "Suspended"]
        failed = sum(p["status"]["phase"] == "Failed" for p in pods)
        status["failed"] = failed
        status["succeeded"] = sum(p["status"]["phase"] == "Succeeded" for p in pods)
        status["active"] = sum(p["status"]["phase"] in ("Pending", "Running") for p in pods)
        status["ready"] = sum(p["status"]["phase"] == "Running" for p in pods)
        if failed > int(spec.get("backoffLimit", 6)):
            self._delete_pods(p for p in pods if p["status"]["phase"] in ("Pending", "Running"))
            conditions.append(
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            )
            status.update(active=0, ready=0)
            return
        by_index: dict[str, list[dict[str, Any]]] = {}
        for p in pods:
            by_index.setdefault(
                p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"], []
            ).append(p)
        done = 0
        for index in range(int(spec["completions"])):
            mine = by_index.get(str(index), [])
            if any(p["status"]["phase"] == "Succeeded" for p in mine):
                done += 1
            elif not any(p["status"]["phase"] in ("Pending", "Running") for p in mine):
                self._start_index(ns, job, index)
        if done == int(spec["completions"]):
            conditions.append({"type": "Complete", "status": "True"})

    # -- the REST API ---------------------------------------------------------------------

    def handle(self, method: str, path: str, query: dict[str, str], body: Any) -> Any:
        parts = path.strip("/").split("/")
        if path.startswith(VOLCANO) and not self.volcano:
            # an API group the server does not serve: a plain-text 404, as a real one sends
            raise ApiError(404, "", "404 page not found")
        if method == "GET" and path.rstrip("/") == "/version":
            return {"major": "1", "minor": "31", "gitVersion": "v1.31.0", "platform": "linux/amd64"}
        if method == "GET" and path.rstrip("/") == VOLCANO:
            resources = [{"name": "jobs", "namespaced": True, "kind": "Job", "verbs": ["create"]}]
            return {"kind": "APIResourceList", "groupVersion": VOLCANO[6:], "resources": resources}
        if path == REVIEWS and method == "POST":
            return self._review(body)
        # [api, v1, namespaces, ns, kind, name?, sub?] or [apis, group, version, namespaces, ...]
        base = 2 if parts[0] == "api" else 3
        if len(parts) < base + 3 or parts[base] != "namespaces":
            raise ApiError(404, "NotFound", f"the server could not find {path}")
        ns, plural = parts[base + 1], parts[base + 2]
        name = parts[base + 3] if len(parts) > base + 3 else None
        sub = parts[base + 4] if len(parts) > base + 4 else None
        group = "" if parts[0] == "api" else parts[1]
        kind = {"batch.volcano.sh": "vcjobs", "batch": "jobs", "": plural}[group]
        resource = f"{plural}.{group}" if group else plural
        verb = {
            ("GET", False): "list",
            ("GET", True): "get",
            ("POST", False): "create",
            ("PUT", True): "update",
            ("PATCH", True): "patch",
            ("DELETE", True): "delete",
            ("DELETE", False): "deletecollection",
        }[(method, name is not None)]
        if verb == "list" and _flag(query, "watch"):
            verb = "watch"
        if (verb, resource) in self.forbidden:
            raise ApiError(
                403,
                "Forbidden",
                f'{resource} is forbidden: User "tester" cannot {verb} resource'
                f' "{plural}" in API group "{group}" in the namespace "{ns}"',
            )
        if ns not in self.namespaces:
            raise ApiError(404, "NotFound", f'namespaces "{ns}" not found')
        with self.cond:
            if verb == "create":
                return self._create(kind, ns, body, query.get("dryRun") == "All")
            if verb in ("list", "watch"):
                terms = parse_selector(query.get("labelSelector", ""))
                named = _field_name(query.get("fieldSelector", ""))
                if verb == "watch":
                    return _WatchRequest(kind, ns, terms, named, query)
                items = [
                    o
                    for (ons, oname), o in sorted(self.store[kind].items())
                    if ons == ns and matches(o, terms) and named in (None, oname)
                ]
                meta = {"resourceVersion": str(self.revision)}
                if query.get("limit"):  # pages, as the API server's limit/continue
                    start = int(query.get("continue") or 0)
                    end = start + int(query["limit"])
                    if end < len(items):
                        meta["continue"] = str(end)
                    items = items[start:end]
                return {"kind": "List", "apiVersion": "v1", "metadata": meta, "items": items}
            if verb == "deletecollection":
                terms = parse_selector(query.get("labelSelector", ""))
                for key, item in list(self.store[kind].items()):
                    if key[0] == ns and matches(item, terms):
                        self._delete(kind, ns, key[1], query)
                return {"kind": "Status", "status": "Success"}
            assert name is not None
            obj = self.store[kind].get((ns, name))
            if obj is None:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found')
            if sub == "log":
                return _LogRequest(ns, name, obj, query)
            if verb == "get":
                return obj
            if verb == "delete":
                self._delete(kind, ns, name, query)
                return {"kind": "Status", "status": "Success"}
            if verb == "update" and sub == "status":
                if body.get("metadata", {}).get("name") != name:
                    raise ApiError(422, "Invalid", "metadata.name does not match the URL")
                obj["status"] = body.get("status") or {}
                if obj["status"].get("state", {}).get("phase") == "Aborted":
                    self._delete_pods(self._owned_pods(ns, name))
                self._changed()
                return obj
            if verb == "patch":
                if not isinstance(body, dict):
                    raise ApiError(415, "UnsupportedMediaType", "send a merge patch")
                _merge(obj, body)
                check_model({"spec": obj["spec"]}, "V1Job", f'Job.batch "{name}"')
                self._reconcile()
                self._changed()
                return obj
        raise ApiError(405, "MethodNotAllowed", f"{method} {path}")

    def _review(self, body: Any) -> dict[str, Any]:
        """A SelfSubjectAccessReview: allowed unless ``forbid`` named the verb and resource
        (``forbid("create", "selfsubjectaccessreviews")`` refuses the review itself)."""
        if ("create", "selfsubjectaccessreviews") in self.forbidden:
            raise ApiError(
                403,
                "Forbidden",
                'selfsubjectaccessreviews.authorization.k8s.io is forbidden: User "tester"'
                ' cannot create resource "selfsubjectaccessreviews" in API group'
                ' "authorization.k8s.io" at the cluster scope',
            )
        check_model(body, "V1SelfSubjectAccessReview", "SelfSubjectAccessReview")
        attrs = body["spec"]["resourceAttributes"]
        resource = attrs["resource"] + (
            f"/{attrs['subresource']}" if attrs.get("subresource") else ""
        )
        if attrs.get("group"):
            resource = f"{attrs['resource']}.{attrs['group']}"
        allowed = (attrs["verb"], resource) not in self.forbidden
        return {**body, "status": {"allowed": allowed, **({} if allowed else {"reason": "RBAC"})}}

    def _create(self, kind: str, ns: str, body: Any, dry_run: bool) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body must be an object")
        meta = body.get("metadata") or {}
        name = str(meta.get("name") or "")
        what = {"vcjobs": "Job.batch.volcano.sh", "jobs": "Job.batch", "services": "Service"}[kind]
        if not _DNS_SUBDOMAIN.match(name) or len(name) > 63:
            raise ApiError(
                422, "Invalid", f'{what} "{name}" is invalid: metadata.name: Invalid value'
            )
        _check_labels(meta, f'{what} "{name}"')
        if kind == "vcjobs":
            self._admit_volcano(name, body)
        elif kind == "jobs":
            check_model(body, "V1Job", f'{what} "{name}"')
            check_pod_spec(body["spec"]["template"], f'{what} "{name}"')
            if body["spec"].get("completionMode") == "Indexed" and not body["spec"].get(
                "completions"
            ):
                raise ApiError(422, "Invalid", f'{what} "{name}": spec.completions: Required value')
        else:
            check_model(body, "V1Service", f'{what} "{name}"')
        if (ns, name) in self.store[kind]:
            raise ApiError(409, "AlreadyExists", f'{what} "{name}" already exists')
        stored: dict[str, Any] = json.loads(json.dumps(body))
        stored["metadata"].update(namespace=ns, uid=secrets.token_hex(8), creationTimestamp=_now())
        if dry_run:
            return stored
        self.store[kind][(ns, name)] = stored
        if kind == "vcjobs":
            stored["status"] = {"state": {"phase": "Pending"}}
            self._start_volcano(ns, stored)
        self._reconcile()
        self._changed()
        return stored

    def _admit_volcano(self, name: str, body: dict[str, Any]) -> None:
        spec = body.get("spec") or {}
        if spec.get("queue") not in self.queues:
            raise ApiError(422, "Invalid", f"unable to find job queue: {spec.get('queue')}")
        names = set()
        for task in spec.get("tasks") or ():
            task_name = str(task.get("name"))
            if not _DNS_LABEL.match(task_name) or task_name in names:
                raise ApiError(422, "Invalid", f"invalid or duplicate task name {task_name!r}")
            names.add(task_name)
            pod = f"{name}-{task_name}-{int(task.get('replicas', 1)) - 1}"
            if len(pod) > 63:
                raise ApiError(422, "Invalid", f"create pod {pod!r}: name must be no more than 63")
            check_model(task.get("template") or {}, "V1Pod", f"task {task_name}")
            check_pod_spec(task.get("template") or {}, f"task {task_name}")

    def _delete(self, kind: str, ns: str, name: str, query: dict[str, str]) -> None:
        self.store[kind].pop((ns, name), None)
        policy = query.get("propagationPolicy")
        if kind == "vcjobs" or (kind == "jobs" and policy in ("Background", "Foreground")):
            self._delete_pods(self._owned_pods(ns, name))
        self._changed()


def _flag(query: dict[str, str], name: str) -> bool:
    """A boolean query parameter as the API server reads it (clients send ``true`` or, in
    older versions of the Python client, ``True``)."""
    return query.get(name, "").lower() in ("true", "1")


def _is_watch(method: str, path: str) -> bool:
    del path
    return method == "WATCH"


def _field_name(selector: str) -> str | None:
    """The name a ``metadata.name=NAME`` field selector asks for (the only one served)."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        key, _, value = term.partition("=")
        if key != "metadata.name":
            raise ApiError(400, "BadRequest", f"field label not supported: {key}")
        return value.lstrip("=")
    return None


class _WatchRequest:
    """A ``?watch=true`` list: the events after ``resourceVersion`` for matching objects."""

    def __init__(
        self,
        kind: str,
        ns: str,
        terms: list[tuple[str, str, str | None]],
        name: str | None,
        query: dict[str, str],
    ) -> None:
        self.kind, self.ns, self.terms, self.name = kind, ns, terms, name
        version = query.get("resourceVersion")
        self.since = int(version) if version not in (None, "", "0") else None
        self.deadline = time.monotonic() + int(query.get("timeoutSeconds") or 1800)

    def wanted(self, kind: str, ns: str, obj: dict[str, Any]) -> bool:
        if kind != self.kind or ns != self.ns:
            return False
        if self.name is not None and obj["metadata"].get("name") != self.name:
            return False
        return matches(obj, self.terms)


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            base.pop(key, None)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


class _LogRequest:
    def __init__(self, ns: str, pod: str, obj: dict[str, Any], query: dict[str, str]) -> None:
        self.ns, self.pod, self.query = ns, pod, query
        names = [c["name"] for c in obj["spec"]["containers"]]
        container = query.get("container")
        if container is None and len(names) > 1:
            raise ApiError(
                400,
                "BadRequest",
                f"a container name must be specified for pod {pod}, choose"
                f" one of: [{' '.join(names)}]",
            )
        self.container = container or names[0]
        if self.container not in names:
            raise ApiError(
                400, "BadRequest", f"container {self.container} is not valid for pod {pod}"
            )


def _stamp(at: float) -> bytes:
    moment = dt.datetime.fromtimestamp(at, dt.timezone.utc)
    return (moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z ").encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeKubernetes
    fault: _Fault | None = None

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        del format, args

    def _serve(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        watch = method == "GET" and _flag(query, "watch")
        with self.fake.cond:
            self.fake.requests.append(("WATCH" if watch else method, split.path))
            self.fake.cond.notify_all()  # tests wait for a watch to be open
        followed = split.path.endswith("/log") and _flag(query, "follow")
        kind = "WATCH" if watch else "LOG" if followed else method
        self.fault = self.fake._take_fault(kind, self.path)
        if self.fault is not None and self._meet(self.fault):
            return
        try:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                raise ApiError(401, "Unauthorized", "Unauthorized")
            body = json.loads(raw) if raw else None
            result = self.fake.handle(method, split.path, query, body)
        except ApiError as e:
            if not e.reason:  # not a Status: the server's bare text answer
                self._send(e.code, f"{e.message}\n".encode(), "text/plain; charset=utf-8")
                return
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": e.message,
                "reason": e.reason,
                "code": e.code,
            }
            self._send(e.code, json.dumps(status).encode())
            return
        if isinstance(result, _LogRequest):
            self._send_log(result)
            return
        if isinstance(result, _WatchRequest):
            self._send_watch(result)
            return
        self._send(201 if method == "POST" else 200, json.dumps(result).encode())

    def _meet(self, fault: _Fault) -> bool:
        """Plays ``fault`` before the request is served; whether that answered it."""
        if fault.kind == "slow":
            time.sleep(fault.delay_s)
            return False
        if fault.kind == "reset":
            self._cut()
            return True
        if fault.kind in ("429", "500", "503"):
            code = int(fault.kind)
            reason = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}
            status = {
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": f"injected fault: {code}", "reason": reason[code], "code": code,
            }  # fmt: skip
            data = json.dumps(status).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if code == 429:
                self.send_header("Retry-After", "1")
            self.end_headers()
            self.wfile.write(data)
            return True
        return False  # drop and gone act on the stream (_send_log, _send_watch)

    def _cut(self) -> None:
        """Closes the connection at once (a reset), whatever was or was not sent."""
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _send(self, code: int, data: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_log(self, request: _LogRequest) -> None:
        fake, q = self.fake, request.query
        key = (request.ns, request.pod, request.container)
        stamps = _flag(q, "timestamps")
        since = time.time() - int(q["sinceSeconds"]) if "sinceSeconds" in q else None

        def render(entries: list[tuple[float, bytes]]) -> bytes:
            out = b""
            for at, text in entries:
                if since is None or at >= since:
                    out += (_stamp(at) + text) if stamps else text
            return out

        if not _flag(q, "follow"):
            with fake.cond:
                data = render(fake.logs.get(key, []))
            self._send(200, data, "text/plain")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        try:
            while True:
                with fake.cond:
                    entries = fake.logs.get(key, [])
                    while len(entries) == sent and key not in fake.log_done:
                        fake.cond.wait(1)
                        entries = fake.logs.get(key, [])
                    fresh, sent = entries[sent:], len(entries)
                    finished = key in fake.log_done and sent == len(fake.logs.get(key, []))
                fault = self.fault.kind if fresh and self.fault is not None else None
                for i, entry in enumerate(fresh):  # one chunk per write of the program
                    data = render([entry])
                    if fault == "split" and i == len(fresh) - 1:
                        data = data[: len(data) // 2]  # the connection is lost inside a line
                    if data:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                if fault in ("drop", "split"):
                    self._cut()  # a connection lost mid-stream
                    return
                if fault == "end":
                    break  # ended in good order while the container runs (a restart)
                if finished:
                    break
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_watch(self, request: _WatchRequest) -> None:
        """Streams the events as JSON lines (one chunk each) until the request times out."""
        fake = self.fake
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if self.fault is not None and self.fault.kind == "gone":
            expired = {
                "type": "ERROR",
                "object": {
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": f"too old resource version: {request.since} ({fake.revision})",
                    "reason": "Expired", "code": 410,
                },
            }  # fmt: skip
            line = json.dumps(expired).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(line), line))
            return
        if self.fault is not None and self.fault.kind == "drop":
            self.wfile.flush()
            self._cut()  # the watch is dropped before any event
            return
        with fake.cond:
            if request.since is None:  # no version: the current objects, as ADDED
                since = fake.revision
                backlog = [
                    ("ADDED", obj)
                    for (ns, _), obj in sorted(fake.store[request.kind].items())
                    if request.wanted(request.kind, ns, obj)
                ]
            else:
                since, backlog = request.since, []
        try:
            while True:
                with fake.cond:
                    fresh = [
                        (kind_, obj)
                        for rev, kind, ns, kind_, obj in fake.events
                        if rev > since and request.wanted(kind, ns, obj)
                    ]
                    since = fake.revision
                    left = request.deadline - time.monotonic()
                    if not backlog and not fresh and left > 0:
                        fake.cond.wait(min(left, 1.0))
                        continue
                with fake.cond:
                    fake.delivered += [*backlog, *fresh]
                for kind_, obj in [*backlog, *fresh]:
                    line = json.dumps({"type": kind_, "object": obj}).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                backlog = []
                if left <= 0:
                    break
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")


# -- what the scheduler's tests submit -----------------------------------------------------

NS = "default"


def app(replicas: int = 2, name: str = "trainer") -> Any:
    """A one-role app (role ``train``, image ``img:1``) with ``replicas`` replicas."""
    from torchx.specs import AppDef, Resource, Role

    role = Role(
        "train",
        "img:1",
        entrypoint="python",
        args=["-m", "train"],
        num_replicas=replicas,
        resource=Resource(cpu=1, gpu=0, memMB=2048),
    )
    return AppDef(name, [role])


def cfg(job_type: str, **extra: object) -> dict[str, object]:
    """Run options for ``job_type`` (``volcano`` or ``batch``) in the default queue."""
    return {"queue": "default", "job_type": job_type, **extra}


def replica_pod(fake: FakeKubernetes, app_id: str, replica: int) -> str:
    """The name of the pod of replica ``replica`` of role ``train`` of ``app_id``."""
    name = app_id.rpartition(":")[2]
    pods = fake.pod_names(NS, f"app.kubernetes.io/instance={name}")
    mine = [p for p in pods if f"-train-{replica}-" in p]
    assert len(mine) == 1, pods
    return mine[0]


def fill_torchx_jobs(fake: FakeKubernetes, count: int) -> None:
    """``count`` TorchX jobs in namespace ``default``: half Volcano jobs, half batch Jobs,
    clones of one of each submitted through the scheduler (``KUBECONFIG`` must point at
    ``fake``)."""
    import copy

    from torchx.schedulers.kubernetes_scheduler import create_scheduler
    from torchx.specs import AppDef, Resource, Role

    sched = create_scheduler("fill")
    role = Role("r", "img", entrypoint="true", resource=Resource(1, 0, 128))
    for job_type in ("volcano", "batch"):
        sched.submit(AppDef("bench", [role]), {"queue": "default", "job_type": job_type})
    with fake.cond:
        for kind in ("vcjobs", "jobs"):
            (key, template) = next(iter(fake.store[kind].items()))
            have = sum(1 for k in fake.store[kind] if k[0] == NS)
            for i in range(have, count // 2):
                clone = copy.deepcopy(template)
                name = f"{key[1][:40]}-{i:05d}"
                clone["metadata"]["name"] = name
                clone["metadata"]["labels"]["app.kubernetes.io/instance"] = name
                fake.store[kind][(NS, name)] = clone
