"""Maps named devices of a ``Resource`` (``devices={"vpc.amazonaws.com/efa": 4}``) to host
device mounts, for container schedulers that expose devices by path (docker)."""

from collections.abc import Callable, Mapping
from functools import partial

from torchx.specs.api import DeviceMount
from torchx.specs.named_resources_aws import EFA_DEVICE, NEURON_DEVICE
from torchx.util.log import get_logger

__all__ = [
    "DEVICES",
    "EFA_DEVICE_PREFIX",
    "NEURON_DEVICE_PREFIX",
    "efa_to_devicemounts",
    "get_device_mounts",
    "neuron_to_devicemounts",
    "to_devicemounts",
]

logger = get_logger(__name__)

EFA_DEVICE_PREFIX = "/dev/infiniband/uverbs"
NEURON_DEVICE_PREFIX = "/dev/neuron"


def to_devicemounts(num_devices: int, device_type: str) -> list[DeviceMount]:
    """``num_devices`` mounts ``{device_type}0 .. {device_type}N-1`` (same path inside)."""
    return [
        DeviceMount(src_path=f"{device_type}{i}", dst_path=f"{device_type}{i}")
        for i in range(num_devices)
    ]


efa_to_devicemounts: Callable[[int], list[DeviceMount]] = partial(
    to_devicemounts, device_type=EFA_DEVICE_PREFIX
)
neuron_to_devicemounts: Callable[[int], list[DeviceMount]] = partial(
    to_devicemounts, device_type=NEURON_DEVICE_PREFIX
)

DEVICES: dict[str, Callable[[int], list[DeviceMount]]] = {
    EFA_DEVICE: efa_to_devicemounts,
    NEURON_DEVICE: neuron_to_devicemounts,
}


def get_device_mounts(devices: Mapping[str, int]) -> list[DeviceMount]:
    """The device mounts for every known named device; unknown names are skipped with a
    warning (the scheduler cannot map them to host paths)."""
    mounts: list[DeviceMount] = []
    for name, count in devices.items():
        to_mounts = DEVICES.get(name)
        if to_mounts is None:
            logger.warning(
                "device `%s` has no known host path and is not mounted; known devices: %s",
                name,
                ", ".join(DEVICES),
            )
            continue
        mounts += to_mounts(count)
    return mounts
