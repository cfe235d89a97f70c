"""Parsers for component arguments that pack several values into one option.

``--name EXPERIMENT/RUN`` carries an experiment and a run name (for experiment
trackers); ``-j NNODESxNPROC`` carries the node count and processes per node. Keeping
the parsing here gives every component the same spelling and the same errors.
"""

import warnings
from pathlib import Path

from torchx.specs import named_resources
from torchx.util.startup.lazy_dataclass import dataclass

__all__ = ["StructuredJArgument", "StructuredNameArgument"]


def _program_stem(m: str | None, script: str | None) -> str:
    """Run name derived from the program: the last module component or the script stem."""
    if m:
        return m.rpartition(".")[2]
    assert script
    return Path(script).stem


@dataclass
class StructuredNameArgument:
    """``{experiment_name}/{run_name}`` as given to ``--name``."""

    experiment_name: str
    run_name: str

    def __str__(self) -> str:
        return f"{self.experiment_name}/{self.run_name}"

    @staticmethod
    def parse_from(
        name: str,
        m: str | None = None,
        script: str | None = None,
        default_experiment_name: str = "default-experiment",
    ) -> "StructuredNameArgument":
        """Splits ``name`` on its first ``/``; exactly one of ``m``/``script`` is required.

        ``exp/run`` sets both; ``exp/`` and ``/`` take the run name from the program
        (module ``a.b.c`` -> ``c``, script ``dir/train.py`` -> ``train``); ``run`` and
        ``/run`` use ``default_experiment_name``.
        """
        if not m and not script:
            raise ValueError(
                "no program given: pass exactly one of a main module (-m) or a script (--script)"
            )
        if m and script:
            raise ValueError(
                f"both a main module (-m {m}) and a script (--script {script}) were given;"
                " pass exactly one of them"
            )
        experiment, sep, run = name.partition("/")
        if not sep:
            experiment, run = "", name
        return StructuredNameArgument(
            experiment_name=experiment or default_experiment_name,
            run_name=run or _program_stem(m, script),
        )


@dataclass
class StructuredJArgument:
    """``{nnodes}x{nproc_per_node}`` as given to ``-j``."""

    nnodes: int
    nproc_per_node: int

    def __str__(self) -> str:
        return f"{self.nnodes}x{self.nproc_per_node}"

    @staticmethod
    def parse_from(h: str, j: str) -> "StructuredJArgument":
        """Parses ``j`` for hosts of named resource ``h``.

        ``-j N`` runs one process per GPU of ``h`` (so ``h`` must have GPUs);
        ``-j NxM`` is taken as given, with a warning when ``h`` has GPUs and ``M`` differs
        from their count.
        """

        num_gpus = named_resources[h].gpu
        nnodes_text, sep, nproc_text = j.partition("x")
        if not nnodes_text.isdigit() or (sep and not nproc_text.isdigit()):
            raise ValueError(
                f"invalid -j {j!r}; use NNODES or NNODESxNPROC_PER_NODE (e.g. -j 2 or -j 2x8)"
            )
        nnodes = int(nnodes_text)
        if not sep:
            if num_gpus <= 0:
                raise ValueError(
                    f"-j {j} cannot infer processes per node: named resource {h!r} has no"
                    f" GPUs; give them explicitly, e.g. -j {nnodes}x8"
                )
            return StructuredJArgument(nnodes=nnodes, nproc_per_node=num_gpus)
        nproc = int(nproc_text)
        if num_gpus > 0 and nproc != num_gpus:
            warnings.warn(
                f"-j {j} runs {nproc} processes per node but {h!r} has {num_gpus} GPUs;"
                f" use -j {nnodes} to run one process per GPU",
                stacklevel=2,
            )
        return StructuredJArgument(nnodes=nnodes, nproc_per_node=nproc)
