"""Entry-point discovery against real installed distributions (``.dist-info`` dirs on
``sys.path``), each scenario in a fresh interpreter so the on-disk cache is exercised."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from torchx_testsupport import write_dist


def run_py(code: str, site: Path, home: Path, **env: str) -> dict[str, object]:
    """Runs ``code`` with ``site`` on PYTHONPATH; ``code`` prints one JSON line last."""
    base = {k: v for k, v in os.environ.items() if k != "TORCHX_NO_ENTRYPOINT_CACHE"}
    full_env = {**base, "PYTHONPATH": str(site), "TORCHX_HOME": str(home), **env}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


QUERY = """
    import json, sys
    from torchx.util.entrypoints import entry_points, distributions
    eps = entry_points("torchx.schedulers")
    print(json.dumps({
        "eps": [list(ep) for ep in eps],
        "dists": distributions(),
        "scanned": "importlib.metadata" in sys.modules,
    }))
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _names(result: dict[str, object]) -> list[str]:
    eps = result["eps"]
    assert isinstance(eps, list)
    return [ep[0] for ep in eps]


def test_groups_are_ordered_by_distribution_then_name(site: Path, home: Path) -> None:
    write_dist(site, "zeta-plugin", {"torchx.schedulers": {"b": "zmod:f", "a": "zmod:f"}})
    write_dist(
        site,
        "alpha-plugin",
        {"torchx.schedulers": {"z": "amod:f"}, "torchx.tracker": {"t": "amod:t"}},
    )
    result = run_py(QUERY, site, home)
    eps = result["eps"]
    assert isinstance(eps, list)
    ours = [ep for ep in eps if ep[3] in ("alpha-plugin", "zeta-plugin")]
    assert ours == [
        ["z", "amod:f", "torchx.schedulers", "alpha-plugin", "1.0"],
        ["a", "zmod:f", "torchx.schedulers", "zeta-plugin", "1.0"],
        ["b", "zmod:f", "torchx.schedulers", "zeta-plugin", "1.0"],
    ]
    dists = result["dists"]
    assert isinstance(dists, list)
    names = [d[0] for d in dists]
    assert "alpha-plugin" in names
    assert "zeta-plugin" in names
    assert "torchx-specs" in names
    assert names == sorted(names, key=str.lower)


def test_cache_hit_miss_and_invalidation(site: Path, home: Path) -> None:
    write_dist(site, "first-plugin", {"torchx.schedulers": {"first": "m1:f"}})

    miss = run_py(QUERY, site, home)
    assert miss["scanned"] is True
    assert "first" in _names(miss)

    cache_dir = home / "cache"
    (cache_file,) = cache_dir.iterdir()
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(cache_file.stat().st_mode) == 0o600

    hit = run_py(QUERY, site, home)
    assert hit["scanned"] is False, "second start must be served from the cache"
    assert hit["eps"] == miss["eps"]

    # Installing a distribution changes the mtime of its site dir: the cache is stale.
    write_dist(site, "second-plugin", {"torchx.schedulers": {"second": "m2:f"}})
    after_install = run_py(QUERY, site, home)
    assert after_install["scanned"] is True
    assert {"first", "second"} <= set(_names(after_install))

    # Removing one is seen too, and the refreshed cache serves the next start.
    shutil.rmtree(site / "first_plugin-1.0.dist-info")
    after_remove = run_py(QUERY, site, home)
    assert "first" not in _names(after_remove)
    assert "second" in _names(after_remove)
    again = run_py(QUERY, site, home)
    assert again["scanned"] is False
    assert again["eps"] == after_remove["eps"]


def test_cache_can_be_disabled(site: Path, home: Path) -> None:
    write_dist(site, "first-plugin", {"torchx.schedulers": {"first": "m1:f"}})
    for _ in range(2):
        result = run_py(QUERY, site, home, TORCHX_NO_ENTRYPOINT_CACHE="1")
        assert result["scanned"] is True
        assert "first" in _names(result)
    assert not (home / "cache").exists()


def test_corrupt_cache_file_is_replaced(site: Path, home: Path) -> None:
    write_dist(site, "first-plugin", {"torchx.schedulers": {"first": "m1:f"}})
    run_py(QUERY, site, home)
    (cache_file,) = (home / "cache").iterdir()
    cache_file.write_bytes(b"\x00not marshal data")
    result = run_py(QUERY, site, home)
    assert result["scanned"] is True
    assert "first" in _names(result)
    assert run_py(QUERY, site, home)["scanned"] is False


def test_invalidate_cache_forces_a_rescan(site: Path, home: Path) -> None:
    write_dist(site, "first-plugin", {"torchx.schedulers": {"first": "m1:f"}})
    run_py(QUERY, site, home)
    code = """
        import json, sys
        from torchx.util import entrypoints
        entrypoints.invalidate_cache()
        names = [ep.name for ep in entrypoints.entry_points("torchx.schedulers")]
        print(json.dumps({"names": names, "scanned": "importlib.metadata" in sys.modules}))
    """
    result = run_py(code, site, home)
    assert result["scanned"] is True
    assert "first" in result["names"]  # type: ignore[operator]


def test_deferred_loading_and_module_entries(site: Path, home: Path) -> None:
    write_dist(
        site,
        "lazy-plugin",
        {
            "torchx.schedulers": {"lazy": "lazy_mod:create"},
            "torchx.components": {"comps": "lazy_comps"},
        },
        {
            "lazy_mod.py": """
                def create(session_name, **kwargs):
                    return ("created", session_name, sorted(kwargs))
            """,
            "lazy_comps/__init__.py": "VALUE = 42\n",
        },
    )
    code = """
        import json, sys
        from torchx.util.entrypoints import load_group
        group = load_group("torchx.schedulers")
        before = "lazy_mod" in sys.modules
        created = group["lazy"]("sess", a=1)
        comps = load_group("torchx.components")["comps"]("ignored", arg=True)
        print(json.dumps({
            "before": before,
            "after": "lazy_mod" in sys.modules,
            "created": created,
            "module_value": comps.VALUE,
            "group_type": type(group).__name__,
        }))
    """
    result = run_py(code, site, home)
    assert result["before"] is False
    assert result["after"] is True
    assert result["created"] == ["created", "sess", ["a"]]
    assert result["module_value"] == 42
    assert result["group_type"] == "dict"


def test_broken_plugin_does_not_hide_others(site: Path, home: Path) -> None:
    write_dist(
        site,
        "broken-plugin",
        {"torchx.schedulers": {"broken": "broken_mod:create"}},
        {"broken_mod.py": "import does_not_exist_anywhere\n"},
    )
    write_dist(
        site,
        "good-plugin",
        {"torchx.schedulers": {"good": "good_mod:create"}},
        {"good_mod.py": "def create(session_name, **kwargs):\n    return 'good:' + session_name\n"},
    )
    code = """
        import json
        from torchx.schedulers import get_scheduler_factories
        factories = get_scheduler_factories()
        try:
            factories["broken"]("s")
            error = None
        except ImportError as e:
            error = type(e).__name__
        print(json.dumps({
            "names": sorted(factories),
            "good": factories["good"]("s"),
            "error": error,
        }))
    """
    result = run_py(code, site, home)
    names = result["names"]
    assert isinstance(names, list)
    assert {"broken", "good"} <= set(names)
    assert result["good"] == "good:s"
    assert result["error"] == "ModuleNotFoundError"


def test_load_and_load_group_contracts(site: Path, home: Path) -> None:
    write_dist(
        site,
        "val-plugin",
        {"torchx.version": {"get_torchx_image": "val_mod:image"}},
        {"val_mod.py": "def image(version):\n    return 'example/img:' + version\n"},
    )
    code = """
        import json
        from torchx.util.entrypoints import load, load_group
        import torchx
        fn = load("torchx.version", "get_torchx_image")
        try:
            load("torchx.version", "nope")
            message = None
        except KeyError as e:
            message = str(e)
        print(json.dumps({
            "image": fn("1.2"),
            "torchx_image": torchx.IMAGE,
            "default": load("torchx.version", "nope", default="d"),
            "none_default": load("torchx.version", "nope", default=None),
            "message": message,
            "empty": load_group("torchx.no_such_group"),
            "compat_default": load_group("torchx.no_such_group", default={"x": 1}),
            "compat_skip": load_group("torchx.no_such_group", default={"x": 1}, skip_defaults=True),
        }))
    """
    result = run_py(code, site, home)
    assert result["image"] == "example/img:1.2"
    assert str(result["torchx_image"]).startswith("example/img:")
    assert result["default"] == "d"
    assert result["none_default"] is None
    message = str(result["message"])
    assert "nope" in message
    assert "torchx.version" in message
    assert "get_torchx_image" in message
    assert result["empty"] == {}
    assert result["compat_default"] == {"x": 1}
    assert result["compat_skip"] == {}


def test_entry_point_info_parts() -> None:
    from torchx.util.entrypoints import EntryPointInfo

    ep = EntryPointInfo("n", "pkg.mod:obj.attr [extra]", "torchx.g", "d", "1")
    assert (ep.module, ep.attr) == ("pkg.mod", "obj.attr")
    assert EntryPointInfo("n", "pkg.mod", "g").attr is None
    assert ep._replace(name="m").name == "m"
    assert ep._asdict()["dist"] == "d"
    name, value, group, dist, version = ep
    assert (name, value, group, dist, version) == ("n", ep.value, "torchx.g", "d", "1")
    assert EntryPointInfo("n", "os.path:join", "g").load() is os.path.join


def test_module_imports_stay_minimal(tmp_path: Path) -> None:
    code = """
        import json, sys
        import torchx.util
        before = set(sys.modules)
        import torchx.util.entrypoints
        print(json.dumps(sorted(set(sys.modules) - before)))
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TORCHX_HOME": str(tmp_path)},
    )
    new_modules = set(json.loads(proc.stdout))
    assert new_modules <= {
        "torchx.util.entrypoints",
        "torchx.util.startup",
        "torchx.util.startup.disk_cache",
        "marshal",
    }
