"""The loop's words are closed: every cause a backend writes is a
:class:`torchx.specs.vocabulary.Cause` and every phase a :class:`PhaseName` (``Phase`` and
``Waiting`` refuse any other at run time; the causes are checked here, in the source)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchx.specs.timeline import Phase, Waiting
from torchx.specs.vocabulary import Cause, PhaseName, keeps_scheduler_word

ROOT = Path(__file__).resolve().parents[1]
_CAUSE_WRITES = re.compile(r"""(?:\bcause\s*=\s*|["']cause["']\s*:\s*)["']([A-Za-z_]+)["']""")


def _sources() -> list[Path]:
    return sorted(ROOT.glob("packages/*/src/torchx/**/*.py"))


def test_every_cause_a_backend_writes_is_in_the_vocabulary() -> None:
    words = {cause.value for cause in Cause}
    found: dict[str, list[str]] = {}
    for path in _sources():
        for match in _CAUSE_WRITES.finditer(path.read_text()):
            found.setdefault(match[1], []).append(str(path.relative_to(ROOT)))
    assert len(found) >= 8, found  # the scan sees the backends' writes
    outside = {word: paths for word, paths in found.items() if word not in words}
    assert outside == {}, f"causes outside torchx.specs.vocabulary.Cause: {outside}"


def test_a_phase_outside_the_vocabulary_is_refused_where_it_is_made() -> None:
    assert Phase("pulling_image", 1.0).phase == PhaseName.PULLING_IMAGE
    with pytest.raises(ValueError, match="phase 'downloading' is not one of submitted, queued"):
        Phase("downloading", 1.0)
    with pytest.raises(ValueError, match="a Waiting's phase 'idle'"):
        Waiting(phase="idle", reason="")


def test_the_causes_a_scheduler_names_are_kept_over_a_traceback() -> None:
    from torchx.specs.failure import Failure, from_log_tail

    tail = 'Traceback (most recent call last):\n  File "t.py", line 1\nMemoryError\n'
    oom = from_log_tail(Failure("r", 0, cause="oom", message="OOMKilled: 2Gi"), tail)
    assert (oom.cause, oom.message) == ("oom", "OOMKilled: 2Gi")
    assert oom.traceback is not None and oom.traceback.endswith("MemoryError")
    plain = from_log_tail(Failure("r", 0, cause="exit_code", exit_code=1), tail)
    assert (plain.cause, plain.message) == ("exception", "MemoryError")
    named = {c for c in Cause if c.named_by_scheduler}
    assert named == {
        Cause.OOM, Cause.TIME_LIMIT, Cause.PREEMPTED, Cause.NODE_FAILURE, Cause.IMAGE_PULL,
        Cause.REJECTED,
    }  # fmt: skip
    assert not keeps_scheduler_word("a third party's word")
