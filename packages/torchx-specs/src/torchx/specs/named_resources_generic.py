"""Cloud-agnostic, t-shirt-sized named resources (``resource(h="gpu.small")``).

The values are convenient defaults, not guarantees: define your own named resources for
production workloads.
"""

from __future__ import annotations

from collections.abc import Callable

from torchx.specs.api import Resource

GiB: int = 1024
"""MB per GiB."""


def gpu_small() -> Resource:
    return Resource(cpu=8, gpu=1, memMB=32 * GiB)


def gpu_medium() -> Resource:
    return Resource(cpu=16, gpu=2, memMB=64 * GiB)


def gpu_large() -> Resource:
    return Resource(cpu=32, gpu=4, memMB=128 * GiB)


def gpu_xlarge() -> Resource:
    return Resource(cpu=64, gpu=8, memMB=256 * GiB)


def cpu_nano() -> Resource:
    return Resource(cpu=1, gpu=0, memMB=512)


def cpu_micro() -> Resource:
    return Resource(cpu=1, gpu=0, memMB=1 * GiB)


def cpu_small() -> Resource:
    return Resource(cpu=1, gpu=0, memMB=2 * GiB)


def cpu_medium() -> Resource:
    return Resource(cpu=2, gpu=0, memMB=4 * GiB)


def cpu_large() -> Resource:
    return Resource(cpu=2, gpu=0, memMB=8 * GiB)


def cpu_xlarge() -> Resource:
    return Resource(cpu=8, gpu=0, memMB=32 * GiB)


NAMED_RESOURCES: dict[str, Callable[[], Resource]] = {
    "gpu.small": gpu_small,
    "gpu.medium": gpu_medium,
    "gpu.large": gpu_large,
    "gpu.xlarge": gpu_xlarge,
    "cpu.nano": cpu_nano,
    "cpu.micro": cpu_micro,
    "cpu.small": cpu_small,
    "cpu.medium": cpu_medium,
    "cpu.large": cpu_large,
    "cpu.xlarge": cpu_xlarge,
}
