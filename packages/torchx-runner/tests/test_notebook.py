"""torchx.notebook: cells written into the in-memory workspace travel with a job."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchx.notebook import get_workspace, workspacefile
from torchx.workspace.dir_workspace import copy_workspace


def test_cells_become_files_of_the_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = get_workspace()
    assert workspace == "memory://torchx-workspace/"
    workspacefile("train.py", "print('trained')\n")
    workspacefile("conf/lr.yaml", "lr: 0.1\n")
    assert "Added train.py to workspace memory://torchx-workspace/" in capsys.readouterr().out
    copy_workspace(workspace, str(tmp_path / "job"))
    assert (tmp_path / "job" / "train.py").read_text() == "print('trained')\n"
    assert (tmp_path / "job" / "conf" / "lr.yaml").read_text() == "lr: 0.1\n"
    for outside in ("../escape.py", "/etc/x", ""):
        with pytest.raises(ValueError, match="give a path inside the workspace"):
            workspacefile(outside, "x")
