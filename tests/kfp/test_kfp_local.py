"""A pipeline of TorchX components run by KFP's own local runner (kfp.local's DockerRunner)
in the real Docker daemon of tools/docker-up.sh, with the locally built test image.

kfp.local (2.17) starts each step with ``auto_remove=True`` and, when the container is
already gone by the time it asks for the logs or the exit status (a step that ends at once,
on a loaded machine), prints nothing and calls the step successful: a race in kfp that made
a failing step pass here now and then. The fixture keeps each step's container until the
test ends (Docker's own ``run`` with ``auto_remove`` dropped), so kfp reads the real output
and exit status; the tests also read what each step printed, not just the states."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.docker import IMAGE, docker_with_test_image

kfp = pytest.importorskip("kfp")


@pytest.fixture
def local_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    docker_with_test_image("TORCHX_REQUIRE_DOCKER")
    from docker.models.containers import ContainerCollection
    from kfp import local

    started: list[Any] = []
    run = ContainerCollection.run

    def run_and_keep(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("auto_remove", None)  # removed below, once kfp has read it
        container = run(self, *args, **kwargs)
        started.append(container)
        return container

    monkeypatch.setattr(ContainerCollection, "run", run_and_keep)
    local.init(runner=local.DockerRunner(), pipeline_root=str(tmp_path / "root"))
    yield local
    for container in started:
        container.remove(force=True)


def _step_logs(output: str) -> dict[str, list[str]]:
    """What each task printed, from kfp.local's "Executing task ... Streamed logs:" blocks."""
    found: dict[str, list[str]] = {}
    current = None
    for raw in re.sub(r"\x1b\[[0-9;]*m", "", output).splitlines():
        started = re.search(r"Executing task '([^']+)'", raw)
        if started:
            current = started.group(1)
            found[current] = []
        elif re.search(r"Task '[^']+' finished", raw):
            current = None
        elif current is not None and raw.startswith("    ") and raw.strip():
            found[current].append(raw.strip())
    return found


def test_two_torchx_steps_run_in_order(
    local_runner: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    from kfp import dsl

    from torchx.components.utils import echo, sh
    from torchx.pipelines.kfp.adapter import container_from_app

    @dsl.pipeline(name="torchx-two-steps")
    def pipeline():  # no annotations: KFP reads them as outputs
        first = container_from_app(echo(msg="hello from step one", image=IMAGE))
        second = container_from_app(
            sh("sh", "-c", 'echo "step two says $GREETING"', image=IMAGE, env={"GREETING": "hi"})
        )
        second.after(first)

    pipeline()
    out = capfd.readouterr()
    logs = _step_logs(out.out + out.err)
    (first_name, second_name) = list(logs)
    assert "hello from step one" in logs[first_name]
    assert "step two says hi" in logs[second_name]
    assert "finished with status SUCCESS" in re.sub(r"\x1b\[[0-9;]*m", "", out.out + out.err)


def test_a_failing_step_fails_the_pipeline(
    local_runner: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    from kfp import dsl

    from torchx.components.utils import python
    from torchx.pipelines.kfp.adapter import container_from_app

    @dsl.pipeline(name="torchx-fails")
    def pipeline():
        code = "print('about to fail', flush=True); raise SystemExit(3)"
        container_from_app(python(c=code, image=IMAGE))

    with pytest.raises(RuntimeError, match=r"FAILURE|failed"):
        pipeline()
    out = capfd.readouterr()
    assert "about to fail" in out.out + out.err
