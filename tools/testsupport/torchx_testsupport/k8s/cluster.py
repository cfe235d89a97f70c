"""Where the real test cluster of tools/k8s-up.sh keeps its credentials, and its image."""

from __future__ import annotations

import os
from pathlib import Path

STATE = Path(os.environ.get("TORCHX_CI_STATE", "/tmp/torchx-ci")) / "k8s"
ADMIN = STATE / "kubeconfig"
"""The admin's kubeconfig (system:masters)."""
LIMITED = STATE / "limited.kubeconfig"
"""A user who may only read jobs, pods and their logs in namespace ``default``."""
IMAGE = os.environ.get("TORCHX_TEST_IMAGE", "torchx-test/python:3.11-r2")
"""The test image, loaded into the node's containerd (no registry outside is reachable)."""
