"""A Kubernetes API server stand-in, kept for what the real test cluster cannot do.

The kubernetes tests run on a real cluster (tools/k8s-up.sh; ``cluster`` and ``proxy`` in
this package). Volcano's controllers and admission webhook cannot be built there (the Go
module proxy refuses ``volcano.sh/volcano``), so the package's Volcano lifecycle tests,
a cluster without Volcano's API and forbidden access reviews still drive the real
``kubernetes`` Python client against this HTTP server on localhost. It speaks the REST API
for the calls the scheduler makes (create with ``dryRun``, get, list with label selectors,
status replace, patch, delete, delete collection, pod logs with follow), requires the
bearer token of its kubeconfig, and plays the controllers:

* Volcano: a created Job gets one Pending pod per task; the Job's phase follows its pods
  (Pending, Running, Completed, Failed, Restarting with ``maxRetry``); a status replace to
  ``Aborted`` deletes the live pods. Its admission checks the queue and pod name lengths.
* the Job controller: an Indexed Job gets one pod per index (none while suspended);
  failed pods are replaced until ``backoffLimit`` (or, per index, ``backoffLimitPerIndex``,
  with the index's failure count on the new pod); ``suspend`` deletes the active pods;
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

from torchx_testsupport.k8s.apps import NS, app, cfg, replica_pod
from torchx_testsupport.k8s.objects import REVIEWS, TOKEN, VOLCANO, ApiError
from torchx_testsupport.k8s.server import FakeKubernetes

__all__ = [
    "NS",
    "REVIEWS",
    "TOKEN",
    "VOLCANO",
    "ApiError",
    "FakeKubernetes",
    "app",
    "cfg",
    "replica_pod",
]
