"""ComponentTestCase as component authors use it (upstream's test base): validate a
component's CLI surface, and run it on local_cwd to its end."""

from __future__ import annotations

import os
import unittest

from torchx.components import utils
from torchx.components.component_test_base import ComponentTestCase
from torchx.specs import AppState


class _EchoTest(ComponentTestCase):
    __test__ = False  # run through unittest below, as a component author's suite runs

    def test_validate(self) -> None:
        self.validate(utils, "echo")

    def test_run_component(self) -> None:
        self.assertTrue(os.path.isdir(self.test_dir))
        status = self.run_component(utils.echo, {"msg": "hi"}, timeout=60)
        self.assertIsNotNone(status)
        assert status is not None
        self.assertEqual(status.state, AppState.SUCCEEDED)

    def test_run_component_returns_when_the_timeout_comes_first(self) -> None:
        status = self.run_component(lambda: utils.sh("sleep", "2"), timeout=0.3)
        assert status is not None
        self.assertFalse(status.is_terminal())


def test_component_test_case_runs_as_a_unittest() -> None:
    before = os.getcwd()
    result = unittest.TextTestRunner(verbosity=0).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(_EchoTest)
    )
    assert result.wasSuccessful(), result.errors + result.failures
    assert os.getcwd() == before  # the test's chdir is undone
