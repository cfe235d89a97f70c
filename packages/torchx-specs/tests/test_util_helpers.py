"""``torchx.util`` helpers: module loading, strings, conf files, session id, colours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from torchx.util.io import read_conf_file
from torchx.util.modules import import_attr, load_module
from torchx.util.strings import normalize_str


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keeps the entry-point cache of in-process lookups out of the real home."""
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "torchx_home"))


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A throw-away package on sys.path with a module that has a broken dependency."""
    name = f"helpers_pkg_{uuid.uuid4().hex[:8]}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "good.py").write_text("VALUE = {'a': 1}\n\ndef fn():\n    return 'called'\n")
    (root / "needs_missing.py").write_text("import no_such_dependency_xyz\nVALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_load_module(pkg: str) -> None:
    assert load_module(f"{pkg}.good:fn")() == "called"
    assert load_module(f"{pkg}.good").VALUE == {"a": 1}
    assert load_module("os.path:join") is os.path.join
    assert load_module(f"{pkg}.nope") is None
    assert load_module(f"{pkg}.good:nope") is None
    assert load_module(f"{pkg}.needs_missing") is None


def test_load_module_warns_about_a_broken_module_only(
    pkg: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A module that is there but cannot be imported is a warning (upstream's head); a
    name that is no module at all (tried as one) stays quiet."""
    (tmp_path / pkg / "broken.py").write_text("def oops(:\n")
    with caplog.at_level("DEBUG", logger="torchx.util.modules"):
        assert load_module(f"{pkg}.broken:main") is None
        assert load_module(f"{pkg}.needs_missing") is None
        assert load_module("no_such_tracker_name") is None
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 2, warned
    assert "broken:main`: SyntaxError" in warned[0]
    assert "no_such_dependency_xyz" in warned[1]


def test_import_attr(pkg: str) -> None:
    assert import_attr(f"{pkg}.good", "VALUE", {}) == {"a": 1}
    assert import_attr(f"{pkg}.absent", "VALUE", "dflt") == "dflt"
    assert import_attr("no_such_top_level_pkg_xyz.mod", "VALUE", "dflt") == "dflt"
    with pytest.raises(AttributeError):
        import_attr(f"{pkg}.good", "MISSING_ATTR", {})
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        import_attr(f"{pkg}.needs_missing", "VALUE", {})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("-Foo_Bar-1", "foobar-1"),
        ("--x", "x"),
        ("--job", "job"),
        ("_-a", "a"),
        ("ABC.def/9", "abcdef9"),
        ("", ""),
    ],
)
def test_normalize_str(raw: str, expected: str) -> None:
    assert normalize_str(raw) == expected


def test_read_conf_file(tmp_path: Path) -> None:
    conf = tmp_path / "c.txt"
    conf.write_text("hello")
    assert read_conf_file(str(conf)) == "hello"
    # relative to the torchx package: the package's own files are reachable
    assert "extend_path" in read_conf_file("_namespace.py")
    with pytest.raises(FileNotFoundError, match="no_such_file"):
        read_conf_file(str(tmp_path / "no_such_file.py"))


def _run(code: str, **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        env={**{k: v for k, v in os.environ.items() if k != "TORCHX_INTERNAL_SESSION_ID"}, **env},
    )
    return proc.stdout.strip()


def test_read_conf_file_falls_back_to_file_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist = site / "filesrc-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: filesrc\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[torchx.file]\nget_file_contents = filesrc:get\n")
    (site / "filesrc.py").write_text("def get(path):\n    return 'served:' + path\n")
    out = _run(
        """
        from torchx.util.io import read_conf_file
        print(read_conf_file("virtual/component.py"))
        """,
        PYTHONPATH=str(site),
        TORCHX_HOME=str(tmp_path / "home"),
    )
    assert out == "served:virtual/component.py"


def test_session_id_is_created_once_and_inherited() -> None:
    out = json.loads(
        _run(
            """
            import json
            from torchx.util import session
            before = session.get_torchx_session_id()
            first = session.get_session_id_or_create_new()
            print(json.dumps([before, first, session.get_session_id_or_create_new(),
                              session.get_torchx_session_id(),
                              session.TORCHX_INTERNAL_SESSION_ID]))
            """
        )
    )
    before, first, second, current, env_name = out
    assert before is None
    assert first == second == current
    assert str(uuid.UUID(first)) == first
    assert env_name == "TORCHX_INTERNAL_SESSION_ID"

    inherited = _run(
        """
        from torchx.util.session import get_session_id_or_create_new
        print(get_session_id_or_create_new())
        """,
        TORCHX_INTERNAL_SESSION_ID="parent-session",
    )
    assert inherited == "parent-session"


def test_new_session_ids_are_random_uuid4() -> None:
    from torchx.util.session import _new_id

    ids = {_new_id() for _ in range(2000)}
    assert len(ids) == 2000
    for value in ids:
        parsed = uuid.UUID(value)
        assert (str(parsed), parsed.version, parsed.variant) == (value, 4, uuid.RFC_4122)


@pytest.mark.parametrize("columns", [None, "123", "0", "-5", "wide"])
def test_terminal_width_matches_shutil(
    columns: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from torchx.util.support.terminal import help_width, terminal_width

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_width() == shutil.get_terminal_size().columns
    assert help_width() == terminal_width() - 2


def test_terminal_width_of_a_real_terminal() -> None:
    import fcntl
    import pty
    import struct
    import termios

    code = (
        "import shutil; from torchx.util.support.terminal import terminal_width;"
        " print(terminal_width(), shutil.get_terminal_size().columns)"
    )
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 137, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    subprocess.run([sys.executable, "-c", code], stdout=secondary, env=env, check=True, timeout=60)
    os.close(secondary)
    output = os.read(main, 4096).decode().split()
    os.close(main)
    assert output == ["137", "137"]


def test_colors_are_empty_without_a_terminal() -> None:
    out = _run(
        """
        from torchx.util import colors
        print(repr([colors.GREEN, colors.BLUE, colors.ORANGE, colors.GRAY, colors.ENDC]))
        """
    )
    assert out == repr([""] * 5)


def test_colors_on_a_terminal() -> None:
    import pty

    code = "from torchx.util import colors; print(repr(colors.GREEN + colors.ENDC))"
    main, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.run(
        [sys.executable, "-c", code], stdout=secondary, env=env, check=True, timeout=60
    )
    os.close(secondary)
    output = os.read(main, 4096).decode()
    os.close(main)
    assert proc.returncode == 0
    assert "\\x1b[32m\\x1b[0m" in output


def test_upstream_module_globals_of_session_and_io() -> None:
    import subprocess
    import sys

    code = (
        "from torchx.util import session\n"
        "assert session.CURRENT_SESSION_ID is None\n"
        "sid = session.get_session_id_or_create_new()\n"
        "assert session.CURRENT_SESSION_ID == sid\n"
        "from pathlib import Path\n"
        "from torchx.util import io\n"
        "assert io.COMPONENTS_DIR == Path('torchx/components')\n"
        "assert Path(io.get_abspath('torchx/util/io.py')).samefile(io.__file__)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "TORCHX_INTERNAL_SESSION_ID"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
