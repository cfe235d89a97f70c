"""A ``unittest`` base class with a private temporary directory and helpers to lay out,
read and check files in it, plus the facts a test branches on (CI, macOS)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import unittest
from collections.abc import Iterable
from pathlib import Path

__all__ = ["IS_CI", "IS_MACOS", "TestWithTmpDir", "write_shell_script"]

IS_CI: bool = os.environ.get("CI", "false").lower() == "true"
"""Whether the tests run in CI (``$CI`` is ``true``)."""

IS_MACOS: bool = sys.platform == "darwin"


def write_shell_script(dir: str, name: str, content: list[str]) -> str:
    """Writes ``dir/name``: a bash script of the lines ``content``, made executable;
    returns its path."""
    path = os.path.join(dir, name)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/bin/bash\n" + "".join(f"{line}\n" for line in content))
    os.chmod(path, 0o755)  # noqa: S103 (a script of the test, run by the test)
    return path


class TestWithTmpDir(unittest.TestCase):
    """Each test gets ``self.tmpdir`` (a new private directory, removed after the test);
    relative paths given to the helpers are inside it."""

    def setUp(self) -> None:
        self.tmpdir: Path = Path(tempfile.mkdtemp(prefix=f"torchx-{type(self).__name__}-"))

    def tearDown(self) -> None:
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def _path(self, path: str | Path) -> Path:
        given = Path(path)
        return given if given.is_absolute() else self.tmpdir / given

    def touch(self, filepath: str) -> Path:
        """An empty file ``filepath`` (its parents made)."""
        path = self._path(filepath)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        return path

    def mkdir(self, dirpath: str) -> Path:
        path = self._path(dirpath)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write(self, filepath: str, content: Iterable[str]) -> Path:
        """``filepath`` holding the strings of ``content``, written as they are."""
        path = self.touch(filepath)
        path.write_text("".join(content), encoding="utf-8")
        return path

    def write_shell_script(self, script_path: str, content: list[str]) -> Path:
        """An executable bash script ``script_path`` of the lines ``content`` (the
        ``#!/bin/bash`` line is added)."""
        return Path(write_shell_script(str(self.tmpdir), script_path, content))

    def read(self, filepath: str | Path) -> list[str]:
        """The lines of ``filepath``, line ends kept."""
        with open(self._path(filepath), encoding="utf-8") as f:
            return f.readlines()

    def assertDirIsEmpty(self, directory: str | Path) -> None:
        path = self._path(directory)
        self.assertTrue(path.is_dir(), f"{path} is not a directory")
        self.assertEqual([], sorted(p.name for p in path.iterdir()), f"{path} is not empty")

    def assertDirTree(self, root: str | Path, tree: dict[str, object]) -> None:
        """``root`` holds exactly ``tree``: a dict is a directory, a string a file, whose
        content (stripped) it is unless empty."""
        path = self._path(root)
        self.assertTrue(path.is_dir(), f"{path} is not a directory")
        self._check_tree(path, tree)

    def _check_tree(self, directory: Path, tree: dict[str, object]) -> None:
        self.assertSetEqual(
            set(tree), {p.name for p in directory.iterdir()}, f"the entries of {directory}"
        )
        for name, expected in tree.items():
            path = directory / name
            if isinstance(expected, dict):
                self.assertTrue(path.is_dir(), f"{path} is not a directory")
                self._check_tree(path, expected)
            else:
                self.assertTrue(path.is_file(), f"{path} is not a file")
                if expected != "":
                    self.assertEqual(expected, path.read_text(encoding="utf-8").strip(), path)

    def create_dir_tree(self, root: str, tree: dict[str, object]) -> Path:
        """Lays out ``tree`` (as :meth:`assertDirTree` reads it) under ``root``."""
        top = self.mkdir(root)
        self._make_tree(top, tree)
        return top

    def _make_tree(self, directory: Path, tree: dict[str, object]) -> None:
        for name, value in tree.items():
            path = directory / name
            if isinstance(value, dict):
                path.mkdir(parents=True, exist_ok=True)
                self._make_tree(path, value)
            else:
                path.write_text(str(value), encoding="utf-8")
