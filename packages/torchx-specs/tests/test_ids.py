"""Random app ids (``torchx.schedulers.ids``) and device mounts (``torchx.schedulers.devices``)."""

from __future__ import annotations

import re

import pytest

from torchx.schedulers.devices import (
    DEVICES,
    efa_to_devicemounts,
    get_device_mounts,
    neuron_to_devicemounts,
    to_devicemounts,
)
from torchx.schedulers.ids import (
    END_CANDIDATES,
    START_CANDIDATES,
    make_unique,
    random_id,
    random_uint64,
)
from torchx.specs.api import DeviceMount
from torchx.specs.named_resources_aws import EFA_DEVICE, NEURON_DEVICE

_DNS_LABEL = re.compile(r"^[a-z][a-z0-9]*$")


def test_alphabets() -> None:
    assert START_CANDIDATES == "bcdfghjklmnpqrstvwxz"
    assert set(END_CANDIDATES) == set(START_CANDIDATES) | set("0123456789")
    assert "8" in END_CANDIDATES
    assert not set("aeiouy") & set(END_CANDIDATES)


def test_random_id_shape() -> None:
    ids = [random_id() for _ in range(200)]
    for rid in ids:
        assert _DNS_LABEL.match(rid), rid
        assert rid[0] in START_CANDIDATES
        assert set(rid[1:]) <= set(END_CANDIDATES)
        assert 8 <= len(rid) <= 15
    assert len(set(ids)) == len(ids)
    # every character of the alphabet shows up over many ids, including the digit 8
    assert set("".join(ids)) == set(END_CANDIDATES)


@pytest.mark.parametrize("length", [1, 5, 13, 20, 64])
def test_random_id_max_length_is_exact(length: int) -> None:
    rid = random_id(length)
    assert len(rid) == length
    assert _DNS_LABEL.match(rid)


@pytest.mark.parametrize("length", [0, -3])
def test_random_id_non_positive_length_is_empty(length: int) -> None:
    assert random_id(length) == ""


def test_random_uint64_range() -> None:
    values = {random_uint64() for _ in range(50)}
    assert all(0 <= v < 2**64 for v in values)
    assert len(values) == 50


def test_make_unique() -> None:
    name = make_unique("trainer")
    prefix, _, suffix = name.partition("-")
    assert prefix == "trainer"
    assert _DNS_LABEL.match(suffix)
    assert make_unique("trainer") != name
    fixed = make_unique("app", 6)
    assert fixed.startswith("app-")
    assert len(fixed) == len("app-") + 6


def test_device_mounts() -> None:
    assert to_devicemounts(2, "/dev/x") == [
        DeviceMount(src_path="/dev/x0", dst_path="/dev/x0", permissions="rwm"),
        DeviceMount(src_path="/dev/x1", dst_path="/dev/x1", permissions="rwm"),
    ]
    assert [m.src_path for m in efa_to_devicemounts(2)] == [
        "/dev/infiniband/uverbs0",
        "/dev/infiniband/uverbs1",
    ]
    assert [m.src_path for m in neuron_to_devicemounts(1)] == ["/dev/neuron0"]
    assert set(DEVICES) == {EFA_DEVICE, NEURON_DEVICE}


def test_get_device_mounts_skips_unknown_devices(caplog: pytest.LogCaptureFixture) -> None:
    mounts = get_device_mounts({EFA_DEVICE: 1, "example.com/widget": 3, NEURON_DEVICE: 2})
    assert [m.dst_path for m in mounts] == [
        "/dev/infiniband/uverbs0",
        "/dev/neuron0",
        "/dev/neuron1",
    ]
    assert "example.com/widget" in caplog.text
