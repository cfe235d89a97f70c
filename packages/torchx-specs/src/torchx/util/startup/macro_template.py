"""``string.Template(text).safe_substitute(mapping)``, parsed once and without :mod:`re`.

Why: every launched role holds a macro (``TORCHX_JOB_ID=...${app_id}``), and
:mod:`string` compiles its pattern with :mod:`re` on import, which together cost a
``torchx run --dryrun`` about a twentieth of its time; and a template parsed once is
substituted for thousands of replicas by a join. The syntax is :class:`string.Template`'s:
``$$`` is ``$``, ``$name`` and ``${name}`` (ASCII identifiers) are replaced when the
mapping has the name, and everything else is left as written.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["MacroTemplate"]

_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_PART = _START | frozenset("0123456789")


class MacroTemplate:
    """One template string, split into literal text and ``(name, as written)`` macros."""

    __slots__ = ("_parts", "template")

    def __init__(self, template: str) -> None:
        self.template = template
        self._parts: list[str | tuple[str, str]] = []
        literal: list[str] = []
        i, end = 0, len(template)
        while True:
            j = template.find("$", i)
            if j < 0:
                literal.append(template[i:])
                break
            literal.append(template[i:j])
            following = template[j + 1 : j + 2]
            if following == "$":
                literal.append("$")
                i = j + 2
                continue
            name_at = j + 2 if following == "{" else j + 1
            k = name_at
            if k < end and template[k] in _START:
                k += 1
                while k < end and template[k] in _PART:
                    k += 1
                closed = following != "{" or template[k : k + 1] == "}"
                if closed:
                    written_end = k + 1 if following == "{" else k
                    self._flush(literal)
                    self._parts.append((template[name_at:k], template[j:written_end]))
                    i = written_end
                    continue
            literal.append("$")  # not a macro: kept as written
            i = j + 1
        self._flush(literal)

    def _flush(self, literal: list[str]) -> None:
        text = "".join(literal)
        if text:
            self._parts.append(text)
        literal.clear()

    def safe_substitute(self, mapping: Mapping[str, object]) -> str:
        """The template with each macro the mapping names replaced by ``str(value)``."""
        out = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
            else:
                name, written = part
                out.append(str(mapping[name]) if name in mapping else written)
        return "".join(out)
