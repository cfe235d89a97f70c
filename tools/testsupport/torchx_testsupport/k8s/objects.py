"""What the stand-in accepts: bodies checked against the kubernetes client's own models,
label selectors, the API's constants."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

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
