"""``-cfg`` for several schedulers at once (``torchx ui -s a,b -cfg ...``): each option
goes to the schedulers that have it, typed as each declares it."""

from __future__ import annotations

import pytest

from torchx.cli.cfg import parse_cfg_str_for
from torchx.cli.errors import CliError
from torchx.specs import runopts


def _opts(**types: type) -> runopts:
    opts = runopts()
    for key, type_ in types.items():
        opts.add(key, type_, f"the {key}")
    return opts


def test_each_option_goes_to_the_schedulers_that_have_it() -> None:
    opts_of = {
        "slurm": _opts(partition=str, time=str),
        "kubernetes": _opts(namespace=str, queue=str),
        "aws_batch": _opts(queue=str, privileged=bool),
    }
    cfgs = parse_cfg_str_for(opts_of, "namespace=ml,queue=gpu,privileged=true")
    assert cfgs == {
        "slurm": {},
        "kubernetes": {"namespace": "ml", "queue": "gpu"},
        "aws_batch": {"queue": "gpu", "privileged": True},
    }
    assert parse_cfg_str_for(opts_of, None) == {"slurm": {}, "kubernetes": {}, "aws_batch": {}}


def test_an_option_none_has_is_one_line_naming_them() -> None:
    opts_of = {"slurm": _opts(partition=str), "kubernetes": _opts(namespace=str)}
    with pytest.raises(CliError) as raised:
        parse_cfg_str_for(opts_of, "partiton=gpu")
    assert str(raised.value) == (
        "-cfg partiton: none of slurm, kubernetes has a run option 'partiton'"
        " (see `torchx runopts SCHEDULER`)"
    )


def test_one_scheduler_gets_the_errors_of_torchx_list() -> None:
    with pytest.raises(CliError) as raised:
        parse_cfg_str_for({"slurm": _opts(partition=str)}, "partiton=gpu")
    assert "unknown run option 'partiton' for scheduler 'slurm' (did you mean 'partition'?)" in str(
        raised.value
    )
    with pytest.raises(CliError) as raised:
        parse_cfg_str_for({"a": _opts(n=int), "b": _opts(m=str)}, "n=many")
    assert "invalid value 'many' for run option 'n' of scheduler 'a' (type int)" in str(
        raised.value
    )
