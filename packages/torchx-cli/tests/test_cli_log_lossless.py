"""No output lost: every line of a fast job reaches `torchx run --log` and `torchx log`.

Upstream lost output in about a third of fast runs (the job ended before the first status
check, so the log follower never started). Repeated to make a race visible.
"""

from __future__ import annotations

import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from conftest import Cli


LINES = 1000
REPEATS = 20
EXPECTED = [f"sh/0 line {i}" for i in range(1, LINES + 1)]
SCRIPT = f'i=1; while [ $i -le {LINES} ]; do echo "line $i"; i=$((i+1)); done'


def _prefixed(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("sh/0 ")]


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--log", "--wait"])
def test_fast_job_loses_no_line(cli: Cli, flag: str) -> None:
    for attempt in range(REPEATS):
        run = cli.run("run", flag, "-s", "local_cwd", "utils.sh", "sh", "-c", SCRIPT)
        assert run.returncode == 0, run.stderr
        assert _prefixed(run.stderr) == EXPECTED, f"attempt {attempt}: run {flag} lost lines"
        handle = run.stdout.strip()
        log = cli.run("log", handle)
        assert log.returncode == 0, log.stderr
        assert log.stdout.splitlines() == EXPECTED, f"attempt {attempt}: torchx log lost lines"


@pytest.mark.slow
def test_fast_multi_replica_job_loses_no_line(cli: Cli) -> None:
    for attempt in range(5):
        run = cli.run(
            "run", "--log", "-s", "local_cwd", "utils.sh", "--num_replicas", "3", "seq", "300"
        )
        assert run.returncode == 0, run.stderr
        for replica in range(3):
            got = [line for line in run.stderr.splitlines() if line.startswith(f"sh/{replica} ")]
            assert got == [f"sh/{replica} {i}" for i in range(1, 301)], f"attempt {attempt}"


@pytest.fixture
def lossy(cli: Cli) -> Cli:
    """Scheduler `lossy`: local_cwd whose *following* read drops lines or fails.

    Stands in for a scheduler whose log follower misses the end of a fast job; the CLI
    must still print every line (it re-reads the full log once the app is terminal).
    """
    cli.add_distribution(
        "lossysched",
        "1.0",
        {"torchx.schedulers": {"lossy": "lossysched:create_scheduler"}},
        {
            "lossysched.py": """
            import itertools
            import os

            from torchx.schedulers.local_scheduler import create_scheduler as _create


            def create_scheduler(session_name, **kwargs):
                scheduler = _create(session_name, **kwargs)
                base = type(scheduler)

                class Lossy(base):
                    def log_iter(self, app_id, role_name, k=0, regex=None, since=None,
                                 until=None, should_tail=False, streams=None):
                        lines = base.log_iter(self, app_id, role_name, k, regex, since,
                                              until, should_tail, streams)
                        if not should_tail:
                            return lines
                        if os.environ.get("LOSSY_MODE") == "fail":
                            raise RuntimeError("log not available yet")
                        return itertools.islice(lines, 10)

                scheduler.__class__ = Lossy
                return scheduler
            """
        },
    )
    return cli


@pytest.mark.parametrize("mode", ["truncate", "fail"])
def test_follower_that_misses_lines_is_caught_up(lossy: Cli, mode: str) -> None:
    run = lossy.run(
        "run", "--log", "-s", "lossy", "utils.sh", "sh", "-c", SCRIPT, env={"LOSSY_MODE": mode}
    )
    assert run.returncode == 0, run.stderr
    assert _prefixed(run.stderr) == EXPECTED
    assert "Traceback" not in run.stderr
    follow = lossy.run("log", "--tail", run.stdout.strip(), env={"LOSSY_MODE": mode})
    assert follow.returncode == 0, follow.stderr
    assert follow.stdout.splitlines() == EXPECTED
