"""A role's args and env reach its process as TorchX says they do, on every backend (the
``backend`` fixture): ``$$`` is TorchX's escape for ``$`` and nothing else rewrites them
(Kubernetes' kubelet would expand ``$(NAME)`` and read ``$$`` as ``$``)."""

from __future__ import annotations

from torchx_testsupport.backends import Backend

COMPONENT = """\
import torchx.specs as specs


def show(text: str, image: str = "/") -> specs.AppDef:
    role = specs.Role(
        "show", image=image, entrypoint="sh",
        args=["-c", 'printf "%s|%s|%s\\\\n" "$1" "$SHOWN" "$2"', "sh", text, "${replica_id}"],
        env={"SHOWN": text}, resource=specs.Resource(cpu=1, gpu=0, memMB=256),
    )
    return specs.AppDef("show", roles=[role])
"""


def test_dollars_and_references_reach_the_process_literally(backend: Backend) -> None:
    (backend.cwd / "show.py").write_text(COMPONENT)
    text = "cost $(HOME) $$$$ 5$"  # TorchX's $$ escape: the process sees "$$"
    image = ["--image", backend.image] if backend.image else ["--image", str(backend.cwd)]
    run = backend.run("--wait", "--log", "./show.py:show", "--text", text, *image)
    assert run.returncode == 0, run.stderr
    out = backend.torchx("log", run.stdout.split()[0]).stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in out] == ["show/0"], out
    assert out[0].endswith(" cost $(HOME) $$ 5$|cost $(HOME) $$ 5$|0"), out
