"""Shell quoting as upstream's ``torchx.util.shlex`` offered it (plugins written for
upstream, such as its LSF scheduler, import ``quote`` from here): the standard library's
functions, under the names upstream's module had."""

from shlex import join, quote

__all__ = ["join", "quote"]
