"""Unit-test helpers for component authors.

A component is a plain function, so it can be tested like any Python code; what plain
tests miss is what the ``torchx`` CLI demands on top: typed parameters and a docstring it
can turn into ``--help``. :class:`ComponentTestCase` checks exactly that, and can run a
component's app on a scheduler (``local_cwd`` by default) to the end.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import time
import unittest
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from torchx.runner import get_runner
from torchx.specs import AppDef, AppStatus, CfgVal
from torchx.specs.component_parser import create_args_parser
from torchx.specs.finder import get_component

__all__ = ["ComponentTestCase"]


class ComponentTestCase(unittest.TestCase):
    """``unittest.TestCase`` with checks for component functions.

    Example::

        class TrainerComponentTest(ComponentTestCase):
            def test_trainer(self) -> None:
                self.validate(my_components, "trainer")

    As upstream's, each test gets a scratch directory ``self.test_dir`` and runs from the
    ``torchx`` package directory (both undone after the test).
    """

    def setUp(self) -> None:
        self.test_dir = tempfile.mkdtemp("torchx_component_test")
        self.old_cwd = os.getcwd()
        os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def tearDown(self) -> None:
        os.chdir(self.old_cwd)
        shutil.rmtree(self.test_dir, ignore_errors=True)

    def validate(self, module: ModuleType, function_name: str) -> None:
        """Fails the test unless ``torchx run path/to/module.py:function_name --help`` would
        work: the component passes the linter and its argument parser builds and prints."""

        path = module.__file__
        self.assertIsNotNone(path, f"module {module.__name__} has no source file")
        component = get_component(f"{os.path.abspath(str(path))}:{function_name}")
        parser = create_args_parser(component.fn)
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown), self.assertRaises(SystemExit) as ended:
            parser.parse_args(["--help"])
        self.assertIn(ended.exception.code, (0, None), shown.getvalue())

    def run_appdef_on_scheduler(
        self,
        app_def: AppDef,
        scheduler: str = "local_cwd",
        cfg: Mapping[str, CfgVal] | None = None,
        wait_interval: float = 1.0,
    ) -> AppStatus | None:
        """Runs ``app_def`` on ``scheduler`` and returns its final status."""

        with get_runner() as runner:
            handle = runner.run(app_def, scheduler, cfg)
            return runner.wait(handle, wait_interval=wait_interval)

    def run_component(  # noqa: PLR0917 (upstream's signature)
        self,
        component: Callable[..., AppDef],
        args: dict[str, Any] | None = None,
        scheduler_params: dict[str, Any] | None = None,
        scheduler: str = "local_cwd",
        interval: float = 0.1,
        timeout: float = 1,
    ) -> AppStatus | None:
        """Builds the app of ``component(**args)``, runs it on ``scheduler`` (its factory
        given ``scheduler_params``) and polls its status every ``interval`` seconds until
        it ends or ``timeout`` seconds have passed; returns the last status seen (not
        terminal when the timeout came first), as upstream's helper does."""

        app_def = component(**(args or {}))
        with get_runner(None, None, **(scheduler_params or {})) as runner:
            handle = runner.run(app_def, scheduler)
            deadline = time.monotonic() + timeout
            status = runner.status(handle)
            while (status is None or not status.is_terminal()) and time.monotonic() < deadline:
                time.sleep(interval)
                status = runner.status(handle)
            return status
