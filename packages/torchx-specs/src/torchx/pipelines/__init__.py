"""Pipeline adapters: TorchX components as steps of workflow engines' pipelines.

A shared package (like ``torchx.schedulers``): adapters live in their own distributions,
e.g. ``torchx.pipelines.kfp`` in ``torchx-pipelines-kfp``.
"""

from torchx._namespace import extend_path

__path__ = extend_path(__path__, __name__)
