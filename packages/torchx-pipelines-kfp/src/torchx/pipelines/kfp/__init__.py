"""Kubeflow Pipelines (KFP 2.x) adapter: run TorchX components as pipeline steps.

See :mod:`torchx.pipelines.kfp.adapter`. Importing this package imports ``kfp``.
"""

from torchx.pipelines.kfp.adapter import (
    component_from_app,
    component_spec_from_app,
    container_from_app,
)

TORCHX_PLUGIN_API = 1
"""The torchx plugin contract this module was built against (torchx.util.plugin_api)."""

__all__ = ["component_from_app", "component_spec_from_app", "container_from_app"]
