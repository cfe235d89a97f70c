"""The light Engine API client's translation of torchx's container requests."""

from __future__ import annotations

import pytest

from torchx.schedulers._docker import client as de


def test_container_body_translates_every_kwarg_torchx_generates() -> None:
    kwargs = {
        "name": "app-r-0",
        "hostname": "app-r-0",
        "environment": {"A": "1", "B": "x=y"},
        "labels": {"l": "v"},
        "network": "torchx",
        "privileged": False,
        "init": True,
        "mounts": [{"Target": "/in", "Source": "/data", "Type": "bind", "ReadOnly": True}],
        "devices": ["/dev/fuse:/dev/fuse:rw", "/dev/null"],
        "device_requests": [{"count": 2, "capabilities": [["compute", "utility"]]}],
        "mem_limit": "1024m",
        "shm_size": "64m",
        "nano_cpus": 1_500_000_000,
        "restart_policy": {"Name": "on-failure", "MaximumRetryCount": 3},
    }
    assert set(kwargs) == de.SUPPORTED_CREATE_KWARGS
    body = de.container_body("img:1", ["python", "-c", "pass"], kwargs)
    assert body == {
        "Image": "img:1",
        "Cmd": ["python", "-c", "pass"],
        "Hostname": "app-r-0",
        "Env": ["A=1", "B=x=y"],
        "Labels": {"l": "v"},
        "NetworkingConfig": {"EndpointsConfig": {"torchx": {}}},
        "HostConfig": {
            "NetworkMode": "torchx",
            "Privileged": False,
            "Init": True,
            "Mounts": kwargs["mounts"],
            "Devices": [
                {
                    "PathOnHost": "/dev/fuse",
                    "PathInContainer": "/dev/fuse",
                    "CgroupPermissions": "rw",
                },
                {
                    "PathOnHost": "/dev/null",
                    "PathInContainer": "/dev/null",
                    "CgroupPermissions": "rwm",
                },
            ],
            "DeviceRequests": [
                {
                    "Driver": "",
                    "Count": 2,
                    "DeviceIDs": [],
                    "Capabilities": [["compute", "utility"]],
                    "Options": {},
                }
            ],
            "Memory": 1024 * 1024 * 1024,
            "ShmSize": 64 * 1024 * 1024,
            "NanoCpus": 1_500_000_000,
            "RestartPolicy": {"Name": "on-failure", "MaximumRetryCount": 3},
        },
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [(512, 512), ("100", 100), ("2k", 2048), ("1m", 1 << 20), ("3g", 3 << 30), ("1.5gb", 3 << 29)],
)
def test_parse_bytes(value: int | str, expected: int) -> None:
    assert de.parse_bytes(value) == expected


def test_parse_bytes_rejects_unknown_units() -> None:
    with pytest.raises(ValueError, match="unit b, k, m or g"):
        de.parse_bytes("12parsecs")


def test_from_env_uses_the_light_client_only_where_it_can() -> None:
    local = de.from_env({})
    assert local is not None and local.address == "unix:///var/run/docker.sock"
    other = de.from_env({"DOCKER_HOST": "unix:///run/user/1000/docker.sock"})
    assert other is not None and other.address == "unix:///run/user/1000/docker.sock"
    tcp = de.from_env({"DOCKER_HOST": "tcp://10.0.0.5:2375"})
    assert tcp is not None and tcp.address == "tcp://10.0.0.5:2375"
    assert de.from_env({"DOCKER_HOST": "tcp://10.0.0.5:2376", "DOCKER_TLS_VERIFY": "1"}) is None
    assert de.from_env({"DOCKER_HOST": "ssh://me@builder"}) is None


def test_unreachable_socket_is_an_os_error(tmp_path: object) -> None:
    client = de.EngineClient(unix_socket="/nonexistent/docker.sock")
    with pytest.raises(OSError):
        client.ping()
