"""A sweep's job arrays on Slurm, without a cluster: how it is split past MaxArraySize, the
sbatch commands that chain the arrays, what squeue's and sacct's answers say of each
element."""

from __future__ import annotations

from torchx.schedulers._slurm.request import SlurmArray
from torchx.schedulers._slurm.status import (
    _from_sacct,
    _from_squeue,
    _Task,
    _task_ids,
    is_array_name,
)


def test_squeue_task_ids_are_expanded() -> None:
    assert _task_ids("3") == [3]
    assert _task_ids("2-5%2") == [2, 3, 4, 5]
    assert _task_ids("[1,4-6]") == [1, 4, 5, 6]
    assert _task_ids("0-8:4") == [0, 4, 8]
    assert _task_ids("N/A") == []


def test_a_sweep_name_carries_its_offset() -> None:
    assert is_array_name("app:train-array-0")
    assert is_array_name("app:train-array-1001")
    assert not is_array_name("app:train-0")
    assert not is_array_name("app:train-array")


def test_a_sweep_is_split_where_the_cluster_says() -> None:
    assert SlurmArray(size=2500, max_array_size=1001).chunks() == [
        (0, 1001),
        (1001, 1001),
        (2002, 498),
    ]
    assert SlurmArray(size=1000, max_array_size=1001).chunks() == [(0, 1000)]
    assert SlurmArray(size=3).chunks() == [(0, 3)]


def test_queue_and_accounting_give_each_element_once() -> None:
    tasks: dict[int, _Task] = {}
    names: dict[str, str] = {}
    squeue = (
        "10|2-3%1|PENDING|JobArrayTaskLimit|0||2026-11-29T10:00:00|N/A|N/A|a:t-array-0|\n"
        "10|1|RUNNING|None|0|n1|2026-11-29T10:00:00|2026-11-29T10:00:01|N/A|a:t-array-0|\n"
        "20|0|PENDING|Dependency|0||2026-11-29T10:00:00|N/A|N/A|a:t-array-4|\n"
    )
    _from_squeue(squeue, tasks, names)
    sacct = (
        "JobID|JobName|State|ExitCode|NodeList|Submit|Start|End\n"
        "10_0|a:t-array-0|FAILED|3:0|n2|2026-11-29T10:00:00|2026-11-29T10:00:01|2026-11-29T10:00:02\n"
        "10_1|a:t-array-0|PENDING|0:0|None assigned|2026-11-29T10:00:00|Unknown|Unknown\n"
        "10_0.batch|batch|FAILED|3:0|n2|||\n"
    )
    _from_sacct(sacct, tasks, names)
    assert {p: t.state for p, t in sorted(tasks.items())} == {
        0: "FAILED",
        1: "RUNNING",  # the queue's word wins over lagging accounting
        2: "PENDING",
        3: "PENDING",
        4: "PENDING",  # the second array's first task: element 4
    }
    assert tasks[0].exit_code == 3 and tasks[2].reason == "JobArrayTaskLimit"
