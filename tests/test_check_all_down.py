"""``torchx check`` when every backend is configured but down: every scheduler and tracker
is reported, each problem with its fix, no traceback, and nothing is created.
(How fast that is: benchmarks/bench_check.py.)"""

from __future__ import annotations

from pathlib import Path

from torchx_testsupport import all_backends_down_env, torchx_check


def test_every_backend_down(tmp_path: Path) -> None:
    env = all_backends_down_env(tmp_path)
    # what is reported, not how fast (benchmarks/bench_check.py): a generous deadline, so a
    # loaded CI machine importing the SDKs slowly still gets every probe's own answer
    result = torchx_check("--timeout", "60", env=env)
    for name in ("local_docker", "slurm", "kubernetes", "aws_batch", "mlflow"):
        assert result[name]["status"] in ("not ready", "not configured"), (name, result[name])
    assert result["local_cwd"]["status"] == "ready", result["local_cwd"]
    assert result["fsspec"]["status"] == "ready", result["fsspec"]
    assert result["local_docker"]["exit"] == 0, "nothing was named: a survey exits 0"
    k8s = result["kubernetes"]["checks"]
    assert "cannot reach the Kubernetes API server" in k8s.get("api server", ("", "", ""))[1], k8s
    aws = result["aws_batch"]["checks"]
    assert "cannot reach" in aws.get("queue", ("", "", ""))[1], aws
    assert not (tmp_path / "runs").exists()
