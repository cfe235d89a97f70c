"""The stand-in's controllers: Volcano's (a pod per task, the Job's phase from its pods) and
the Job controller's (a pod per index, retries to ``backoffLimit``, suspend)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from typing import Any

from torchx_testsupport.k8s.objects import (
    _now,
)


class Controllers:
    """Mixed into :class:`FakeKubernetes`: what the cluster does on its own."""

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

    def _start_index(self, ns: str, job: dict[str, Any], index: int, failed: int = 0) -> None:
        name = job["metadata"]["name"]
        idx = {"batch.kubernetes.io/job-completion-index": str(index)}
        annotations = dict(idx)
        if "backoffLimitPerIndex" in job["spec"]:  # the index's failed pods so far
            annotations["batch.kubernetes.io/job-index-failure-count"] = str(failed)
        self._new_pod(
            ns,
            f"{name}-{index}-{secrets.token_hex(3)[:5]}",
            job["spec"]["template"],
            {"job-name": name, "batch.kubernetes.io/job-name": name, **idx},
            annotations=annotations,
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
        by_index: dict[str, list[dict[str, Any]]] = {}
        for p in pods:
            by_index.setdefault(
                p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"], []
            ).append(p)
        per_index = spec.get("backoffLimitPerIndex")
        if per_index is not None:
            worst = max(
                (sum(p["status"]["phase"] == "Failed" for p in mine) for mine in by_index.values()),
                default=0,
            )
            exceeded = worst > int(per_index)
            reason, message = (
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes",
            )
        else:
            exceeded = failed > int(spec.get("backoffLimit", 6))
            reason, message = "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        if exceeded:
            self._delete_pods(p for p in pods if p["status"]["phase"] in ("Pending", "Running"))
            conditions.append(
                {"type": "Failed", "status": "True", "reason": reason, "message": message}
            )
            status.update(active=0, ready=0)
            return
        done = 0
        for index in range(int(spec["completions"])):
            mine = by_index.get(str(index), [])
            if any(p["status"]["phase"] == "Succeeded" for p in mine):
                done += 1
            elif not any(p["status"]["phase"] in ("Pending", "Running") for p in mine):
                self._start_index(
                    ns, job, index, sum(p["status"]["phase"] == "Failed" for p in mine)
                )
        if done == int(spec["completions"]):
            conditions.append({"type": "Complete", "status": "True"})

    # -- the REST API ---------------------------------------------------------------------
