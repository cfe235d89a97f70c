"""The stand-in's REST API: one ``handle`` call per request, after faults and auth."""

from __future__ import annotations

import json
import secrets
from typing import Any

from torchx_testsupport.k8s.http import _field_name, _flag, _LogRequest, _merge, _WatchRequest
from torchx_testsupport.k8s.objects import (
    _DNS_LABEL,
    _DNS_SUBDOMAIN,
    REVIEWS,
    VOLCANO,
    ApiError,
    _check_labels,
    _now,
    check_model,
    check_pod_spec,
    matches,
    parse_selector,
)


class RestApi:
    """Mixed into :class:`FakeKubernetes`: answers the requests the scheduler makes."""

    def handle(self, method: str, path: str, query: dict[str, str], body: Any) -> Any:
        parts = path.strip("/").split("/")
        if method == "GET" and path.rstrip("/") == "/apis":  # discovery: the groups served
            versions = ["batch/v1", VOLCANO[6:]] if self.volcano else ["batch/v1"]
            groups = [
                {"name": v.split("/")[0], "versions": [{"groupVersion": v}]} for v in versions
            ]
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        served = path.startswith(("/api/", "/apis/batch/", REVIEWS, "/version"))
        if (path.startswith(VOLCANO) and not self.volcano) or not (
            served or path.startswith(VOLCANO)
        ):
            # an API group the server does not serve (it has no JobSet or Kueue either): a
            # plain-text 404, as a real one sends
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
