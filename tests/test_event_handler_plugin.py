"""Upstream head's ``event_handler`` plugin type and ``torchx.testing``, as a plugin
author uses them: a distribution of our own registers the handler of TorchX's default
event destination (``null``) in ``torchx_plugins.event_handlers``, tests itself with
``torchx.testing.fixtures``, and a real ``torchx run`` sends its events there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

TORCHX = str(Path(sys.executable).parent / "torchx")

AUDIT = """
import logging
import os

from torchx.plugins import register


@register.event_handler("null")
def audit() -> logging.Handler:
    '''Every TorchX event, one JSON line each, into $AUDIT_LOG.'''
    return logging.FileHandler(os.environ["AUDIT_LOG"])
"""

PLUGINS_OWN_TESTS = """
import logging
import unittest

from torchx.testing.fixtures import IS_CI, TestWithTmpDir
from torchx_plugins.event_handlers.audit import audit


class AuditTest(TestWithTmpDir):
    def test_the_handler_writes_where_it_is_told(self) -> None:
        import os

        os.environ["AUDIT_LOG"] = str(self.tmpdir / "audit.log")
        handler = audit()
        handler.emit(logging.makeLogRecord({"msg": "hello"}))
        handler.close()
        self.assertEqual(self.read("audit.log"), ["hello\\n"])
        self.write_shell_script("bin/x.sh", ["echo x"])
        self.assertDirTree(".", {"audit.log": "hello", "bin": {"x.sh": ""}})
        self.assertIsInstance(IS_CI, bool)


if __name__ == "__main__":
    unittest.main()
"""


def test_an_event_handler_plugin_receives_the_runs_events(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "torchx_plugins" / "event_handlers").mkdir(parents=True)
    (site / "torchx_plugins" / "event_handlers" / "audit.py").write_text(textwrap.dedent(AUDIT))
    (tmp_path / "test_audit.py").write_text(textwrap.dedent(PLUGINS_OWN_TESTS))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "AUDIT_LOG": str(tmp_path / "audit.log"),
        "TORCHX_HOME": str(tmp_path / "home"),
    }
    own = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "test_audit"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert own.returncode == 0 and "Ran 1 test" in own.stderr, own.stderr

    listed = subprocess.run(
        [TORCHX, "plugins"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert "event handlers:" in listed.stdout and "audit.py" not in listed.stdout, listed.stdout
    assert "torchx_plugins.event_handlers.audit:audit" in listed.stdout, listed.stdout
    run = subprocess.run(
        [TORCHX, "run", "-s", "local_cwd", "utils.echo", "--msg", "hi"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    apis = {event["api"] for event in events}
    assert {"run", "status"} <= apis or {"schedule", "status"} <= apis, apis
    assert all(event["scheduler"] == "local_cwd" for event in events)
