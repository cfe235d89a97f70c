"""Named resources for AWS EC2 instance types (``resource(h="aws_p4d.24xlarge")``).

Each resource asks for the whole instance: all of its vCPUs and GPUs, its EFA and Neuron
devices, and 96% of its memory (the rest is left to the OS and agents). Every resource
carries the instance type as the ``node.kubernetes.io/instance-type`` capability so that
Kubernetes places the pod on a node of that type.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from torchx.specs.api import Resource

EFA_DEVICE = "vpc.amazonaws.com/efa"
"""Device name of an Elastic Fabric Adapter (high-bandwidth networking)."""

NEURON_DEVICE = "aws.amazon.com/neurondevice"
"""Device name of an AWS Neuron (Trainium/Inferentia) accelerator."""

K8S_ITYPE = "node.kubernetes.io/instance-type"
"""Capability key holding the instance type."""

MEM_TAX = 0.96
"""Share of an instance's memory a job may use."""

GiB: int = int(1024 * MEM_TAX)
"""Usable MB per GiB of instance memory (983: :data:`MEM_TAX` applied), as upstream
defines it, so ``16 * GiB`` in a user's resource equals an AWS resource's share."""


def _instance(
    instance_type: str, *, cpu: int, gpu: int, gib: int, efa: int = 0, neuron: int = 0
) -> Resource:
    devices: dict[str, int] = {}
    if efa:
        devices[EFA_DEVICE] = efa
    if neuron:
        devices[NEURON_DEVICE] = neuron
    return Resource(
        cpu=cpu,
        gpu=gpu,
        memMB=gib * GiB,
        capabilities={K8S_ITYPE: instance_type},
        devices=devices,
    )


def instance_type_from_resource(resource: Resource) -> str | None:
    """The EC2 instance type a resource asks for, or ``None`` (with a warning) if unset."""
    instance_type = resource.capabilities.get(K8S_ITYPE)
    if instance_type is None:
        warnings.warn(
            f"resource {resource} has no {K8S_ITYPE!r} capability; use an aws_* named"
            " resource (e.g. resource(h='aws_p4d.24xlarge')) to pick an instance type",
            stacklevel=2,
        )
        return None
    return str(instance_type)


def aws_t3_medium() -> Resource:
    return _instance("t3.medium", cpu=2, gpu=0, gib=4)


def aws_m5_large() -> Resource:
    return _instance("m5.large", cpu=2, gpu=0, gib=8)


def aws_m5_xlarge() -> Resource:
    return _instance("m5.xlarge", cpu=4, gpu=0, gib=16)


def aws_m5_2xlarge() -> Resource:
    return _instance("m5.2xlarge", cpu=8, gpu=0, gib=32)


def aws_m5_4xlarge() -> Resource:
    return _instance("m5.4xlarge", cpu=16, gpu=0, gib=64)


def aws_m5_8xlarge() -> Resource:
    return _instance("m5.8xlarge", cpu=32, gpu=0, gib=128)


def aws_m5_12xlarge() -> Resource:
    return _instance("m5.12xlarge", cpu=48, gpu=0, gib=192)


def aws_m5_16xlarge() -> Resource:
    return _instance("m5.16xlarge", cpu=64, gpu=0, gib=256)


def aws_m5_24xlarge() -> Resource:
    return _instance("m5.24xlarge", cpu=96, gpu=0, gib=384)


def aws_m5_metal() -> Resource:
    return _instance("m5.metal", cpu=96, gpu=0, gib=384)


def aws_m5d_large() -> Resource:
    return _instance("m5d.large", cpu=2, gpu=0, gib=8)


def aws_m5d_xlarge() -> Resource:
    return _instance("m5d.xlarge", cpu=4, gpu=0, gib=16)


def aws_m5d_2xlarge() -> Resource:
    return _instance("m5d.2xlarge", cpu=8, gpu=0, gib=32)


def aws_m5d_4xlarge() -> Resource:
    return _instance("m5d.4xlarge", cpu=16, gpu=0, gib=64)


def aws_m5d_8xlarge() -> Resource:
    return _instance("m5d.8xlarge", cpu=32, gpu=0, gib=128)


def aws_m5d_12xlarge() -> Resource:
    return _instance("m5d.12xlarge", cpu=48, gpu=0, gib=192)


def aws_m5d_16xlarge() -> Resource:
    return _instance("m5d.16xlarge", cpu=64, gpu=0, gib=256)


def aws_m5d_24xlarge() -> Resource:
    return _instance("m5d.24xlarge", cpu=96, gpu=0, gib=384)


def aws_m5d_metal() -> Resource:
    return _instance("m5d.metal", cpu=96, gpu=0, gib=384)


def aws_c5_18xlarge() -> Resource:
    return _instance("c5.18xlarge", cpu=72, gpu=0, gib=142)


def aws_p3_2xlarge() -> Resource:
    return _instance("p3.2xlarge", cpu=8, gpu=1, gib=61)


def aws_p3_8xlarge() -> Resource:
    return _instance("p3.8xlarge", cpu=32, gpu=4, gib=244)


def aws_p3_16xlarge() -> Resource:
    return _instance("p3.16xlarge", cpu=64, gpu=8, gib=488)


def aws_p3dn_24xlarge() -> Resource:
    return _instance("p3dn.24xlarge", cpu=96, gpu=8, gib=768, efa=1)


def aws_p4d_24xlarge() -> Resource:
    return _instance("p4d.24xlarge", cpu=96, gpu=8, gib=1152, efa=4)


def aws_p4de_24xlarge() -> Resource:
    return _instance("p4de.24xlarge", cpu=96, gpu=8, gib=1152, efa=4)


def aws_p5_48xlarge() -> Resource:
    return _instance("p5.48xlarge", cpu=192, gpu=8, gib=2048, efa=32)


def aws_p5e_48xlarge() -> Resource:
    return _instance("p5e.48xlarge", cpu=192, gpu=8, gib=2048, efa=32)


def aws_p5en_48xlarge() -> Resource:
    return _instance("p5en.48xlarge", cpu=192, gpu=8, gib=2048, efa=16)


def aws_p6_b200_48xlarge() -> Resource:
    return _instance("p6-b200.48xlarge", cpu=192, gpu=8, gib=2048, efa=8)


def aws_p6_b300_48xlarge() -> Resource:
    return _instance("p6-b300.48xlarge", cpu=192, gpu=8, gib=4096, efa=16)


def aws_p6e_gb200_36xlarge() -> Resource:
    return _instance("p6e-gb200.36xlarge", cpu=144, gpu=4, gib=960, efa=16)


def aws_g4dn_xlarge() -> Resource:
    return _instance("g4dn.xlarge", cpu=4, gpu=1, gib=16)


def aws_g4dn_2xlarge() -> Resource:
    return _instance("g4dn.2xlarge", cpu=8, gpu=1, gib=32)


def aws_g4dn_4xlarge() -> Resource:
    return _instance("g4dn.4xlarge", cpu=16, gpu=1, gib=64)


def aws_g4dn_8xlarge() -> Resource:
    return _instance("g4dn.8xlarge", cpu=32, gpu=1, gib=128, efa=1)


def aws_g4dn_16xlarge() -> Resource:
    return _instance("g4dn.16xlarge", cpu=64, gpu=1, gib=256, efa=1)


def aws_g4dn_12xlarge() -> Resource:
    return _instance("g4dn.12xlarge", cpu=48, gpu=4, gib=192, efa=1)


def aws_g4dn_metal() -> Resource:
    return _instance("g4dn.metal", cpu=96, gpu=8, gib=384, efa=1)


def aws_g5_xlarge() -> Resource:
    return _instance("g5.xlarge", cpu=4, gpu=1, gib=16)


def aws_g5_2xlarge() -> Resource:
    return _instance("g5.2xlarge", cpu=8, gpu=1, gib=32)


def aws_g5_4xlarge() -> Resource:
    return _instance("g5.4xlarge", cpu=16, gpu=1, gib=64)


def aws_g5_8xlarge() -> Resource:
    return _instance("g5.8xlarge", cpu=32, gpu=1, gib=128, efa=1)


def aws_g5_16xlarge() -> Resource:
    return _instance("g5.16xlarge", cpu=64, gpu=1, gib=256, efa=1)


def aws_g5_12xlarge() -> Resource:
    return _instance("g5.12xlarge", cpu=48, gpu=4, gib=192, efa=1)


def aws_g5_24xlarge() -> Resource:
    return _instance("g5.24xlarge", cpu=96, gpu=4, gib=384, efa=1)


def aws_g5_48xlarge() -> Resource:
    return _instance("g5.48xlarge", cpu=192, gpu=8, gib=768, efa=1)


def aws_g6e_xlarge() -> Resource:
    return _instance("g6e.xlarge", cpu=4, gpu=1, gib=32)


def aws_g6e_2xlarge() -> Resource:
    return _instance("g6e.2xlarge", cpu=8, gpu=1, gib=64)


def aws_g6e_4xlarge() -> Resource:
    return _instance("g6e.4xlarge", cpu=16, gpu=1, gib=128)


def aws_g6e_8xlarge() -> Resource:
    return _instance("g6e.8xlarge", cpu=32, gpu=1, gib=256)


def aws_g6e_16xlarge() -> Resource:
    return _instance("g6e.16xlarge", cpu=64, gpu=1, gib=512)


def aws_g6e_12xlarge() -> Resource:
    return _instance("g6e.12xlarge", cpu=48, gpu=4, gib=384)


def aws_g6e_24xlarge() -> Resource:
    return _instance("g6e.24xlarge", cpu=96, gpu=4, gib=768, efa=2)


def aws_g6e_48xlarge() -> Resource:
    return _instance("g6e.48xlarge", cpu=192, gpu=8, gib=1536, efa=4)


def aws_trn1_2xlarge() -> Resource:
    return _instance("trn1.2xlarge", cpu=8, gpu=0, gib=32, neuron=1)


def aws_trn1_32xlarge() -> Resource:
    return _instance("trn1.32xlarge", cpu=128, gpu=0, gib=512, efa=8, neuron=16)


def aws_inf2_xlarge() -> Resource:
    return _instance("inf2.xlarge", cpu=4, gpu=0, gib=16, neuron=1)


def aws_inf2_8xlarge() -> Resource:
    return _instance("inf2.8xlarge", cpu=32, gpu=0, gib=128, neuron=1)


def aws_inf2_24xlarge() -> Resource:
    return _instance("inf2.24xlarge", cpu=96, gpu=0, gib=384, neuron=6)


def aws_inf2_48xlarge() -> Resource:
    return _instance("inf2.48xlarge", cpu=192, gpu=0, gib=768, neuron=12)


NAMED_RESOURCES: dict[str, Callable[[], Resource]] = {
    "aws_t3.medium": aws_t3_medium,
    "aws_m5.large": aws_m5_large,
    "aws_m5.xlarge": aws_m5_xlarge,
    "aws_m5.2xlarge": aws_m5_2xlarge,
    "aws_m5.4xlarge": aws_m5_4xlarge,
    "aws_m5.8xlarge": aws_m5_8xlarge,
    "aws_m5.12xlarge": aws_m5_12xlarge,
    "aws_m5.16xlarge": aws_m5_16xlarge,
    "aws_m5.24xlarge": aws_m5_24xlarge,
    "aws_m5.metal": aws_m5_metal,
    "aws_m5d.large": aws_m5d_large,
    "aws_m5d.xlarge": aws_m5d_xlarge,
    "aws_m5d.2xlarge": aws_m5d_2xlarge,
    "aws_m5d.4xlarge": aws_m5d_4xlarge,
    "aws_m5d.8xlarge": aws_m5d_8xlarge,
    "aws_m5d.12xlarge": aws_m5d_12xlarge,
    "aws_m5d.16xlarge": aws_m5d_16xlarge,
    "aws_m5d.24xlarge": aws_m5d_24xlarge,
    "aws_m5d.metal": aws_m5d_metal,
    "aws_c5.18xlarge": aws_c5_18xlarge,
    "aws_p3.2xlarge": aws_p3_2xlarge,
    "aws_p3.8xlarge": aws_p3_8xlarge,
    "aws_p3.16xlarge": aws_p3_16xlarge,
    "aws_p3dn.24xlarge": aws_p3dn_24xlarge,
    "aws_p4d.24xlarge": aws_p4d_24xlarge,
    "aws_p4de.24xlarge": aws_p4de_24xlarge,
    "aws_p5.48xlarge": aws_p5_48xlarge,
    "aws_p5e.48xlarge": aws_p5e_48xlarge,
    "aws_p5en.48xlarge": aws_p5en_48xlarge,
    "aws_p6-b200.48xlarge": aws_p6_b200_48xlarge,
    "aws_p6-b300.48xlarge": aws_p6_b300_48xlarge,
    "aws_p6e-gb200.36xlarge": aws_p6e_gb200_36xlarge,
    "aws_g4dn.xlarge": aws_g4dn_xlarge,
    "aws_g4dn.2xlarge": aws_g4dn_2xlarge,
    "aws_g4dn.4xlarge": aws_g4dn_4xlarge,
    "aws_g4dn.8xlarge": aws_g4dn_8xlarge,
    "aws_g4dn.16xlarge": aws_g4dn_16xlarge,
    "aws_g4dn.12xlarge": aws_g4dn_12xlarge,
    "aws_g4dn.metal": aws_g4dn_metal,
    "aws_g5.xlarge": aws_g5_xlarge,
    "aws_g5.2xlarge": aws_g5_2xlarge,
    "aws_g5.4xlarge": aws_g5_4xlarge,
    "aws_g5.8xlarge": aws_g5_8xlarge,
    "aws_g5.16xlarge": aws_g5_16xlarge,
    "aws_g5.12xlarge": aws_g5_12xlarge,
    "aws_g5.24xlarge": aws_g5_24xlarge,
    "aws_g5.48xlarge": aws_g5_48xlarge,
    "aws_g6e.xlarge": aws_g6e_xlarge,
    "aws_g6e.2xlarge": aws_g6e_2xlarge,
    "aws_g6e.4xlarge": aws_g6e_4xlarge,
    "aws_g6e.8xlarge": aws_g6e_8xlarge,
    "aws_g6e.16xlarge": aws_g6e_16xlarge,
    "aws_g6e.12xlarge": aws_g6e_12xlarge,
    "aws_g6e.24xlarge": aws_g6e_24xlarge,
    "aws_g6e.48xlarge": aws_g6e_48xlarge,
    "aws_trn1.2xlarge": aws_trn1_2xlarge,
    "aws_trn1.32xlarge": aws_trn1_32xlarge,
    "aws_inf2.xlarge": aws_inf2_xlarge,
    "aws_inf2.8xlarge": aws_inf2_8xlarge,
    "aws_inf2.24xlarge": aws_inf2_24xlarge,
    "aws_inf2.48xlarge": aws_inf2_48xlarge,
}
