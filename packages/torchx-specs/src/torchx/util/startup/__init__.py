"""The start-up room: every technique TorchX uses to start fast, and nothing else.

TorchX starts with plain Python: lazy imports at the SDK seams, ``from __future__ import
annotations`` with type-only names under ``TYPE_CHECKING = False`` (the idiom type
checkers know; it spares ``import typing``), and the standard library everywhere. What
goes beyond that lives here, one module per technique, each kept only while a benchmark
row shows that it pays (ratios to ``python -c pass`` in the same run; the figures are the
ones docs/design.md reports):

``disk_cache``
    Four answers kept on disk under one rule (key plus file stamps). Rows: the table at
    the end of ``benchmarks/bench_cli.py``, each command with and without its cache:
    ``--help`` (``entrypoints``), ``builtins`` (``components``), ``runopts``
    (``runopts``), ``run --dryrun`` (``lint``).
``macro_template``
    ``string.Template``'s substitution without ``re``, parsed once and substituted for
    every replica. Rows: ``bench_cli`` ``run --dryrun``; ``bench_k8s`` (a) at 10,000
    replicas.
``go_pipe``
    The local_cwd launcher hands the app to its pre-forked supervisor as ``marshal``
    bytes. Row: ``bench_cli`` ``run --wait`` and ``bench_local_scheduler`` (a).
``yaml_writer``
    Kubernetes objects written as YAML in a single pass, shared sub-objects once. Scale,
    not start-up: ``bench_k8s`` (b), printing a 10,000-replica dry run.
``lazy_dataclass`` and ``fn_params``
    Dataclasses without loading :mod:`dataclasses` (and :mod:`inspect`) until someone
    asks; a component's parameters from its code object. Frozen: each falls back to the
    standard library for anything it does not cover. Rows: ``bench_cli`` ``import
    torchx.specs`` and ``run --dryrun``.
``static_typing``
    ``overload`` and a ``Generic`` base that exist at run time without :mod:`typing`.
    Row: ``bench_cli`` ``import torchx.specs``.
``plain_args``
    A plain command line read without argparse, from the same option table argparse is
    built from (:mod:`torchx.cli._option_table`). Rows: ``bench_cli`` ``run --dryrun``
    and ``run --wait``.

Private: none of this is part of the plugin contract.
"""
