"""Command lines in their plain form, read without argparse.

Why: importing argparse and building its parsers costs about a fifth of a ``torchx run``
(the command's own options, then the component's). Most command lines are plain: options
spelled exactly as declared, each once, each value a separate word (or after ``=``) that
does not start with ``-``, then the positional words. :func:`split_options` reads such a
line into what argparse would produce; for anything else (``--help``, an abbreviation, an
unknown or repeated option, a missing value, ``--``) it returns ``None`` and the caller
lets argparse parse the line, so every error and corner case stays argparse's.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["split_options"]


def split_options(
    words: "Sequence[str]",
    flags: "Mapping[str, str]",
    options: "Mapping[str, str]",
) -> "tuple[dict[str, object], list[str]] | None":
    """``({dest: value}, positional words)`` of a plain command line, else ``None``.

    ``flags`` maps each spelling of a ``store_true`` option to its dest (given: ``True``),
    ``options`` each spelling of a once-only option taking one value. Options end at the
    first word that does not start with ``-``; it and every word after it are returned
    as they are (argparse's ``REMAINDER``).
    """
    given: dict[str, object] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-"):
            break
        if word in flags:
            given[flags[word]] = True
            i += 1
            continue
        spelling, equals, value = word.partition("=")
        dest = options.get(spelling)
        if dest is None or dest in given:
            return None
        if not equals:
            if i + 1 == len(words) or words[i + 1].startswith("-"):
                return None
            i += 1
            value = words[i]
        given[dest] = value
        i += 1
    return given, list(words[i:])
