"""Run configs: the typed ``key=value`` options a scheduler accepts (``-cfg`` on the CLI)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping

from torchx.specs._common import InvalidRunConfigException, cases
from torchx.util.startup.lazy_dataclass import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CfgVal = str | int | float | bool | list[str] | dict[str, str] | None
"""A run config value: ``str | int | float | bool | list[str] | dict[str, str] | None``."""

_TRUE_WORDS = ("true", "1", "yes", "on")
_FALSE_WORDS = ("false", "0", "no", "off")


def get_type_name(tp: Any) -> str:
    """A short printable name of an option type (``str``, ``list``, ``typing.List[str]``).

    Args:
        tp: the type.

    Returns:
        Its ``__name__``, or its ``str`` for a ``typing`` construct.
    """
    if getattr(tp, "__module__", None) != "typing" and hasattr(tp, "__name__"):
        return str(tp.__name__)
    return str(tp)


def _is_list_of_str(tp: Any) -> bool:
    typing = sys.modules.get("typing")  # a typing.List[str] was made with it loaded
    return bool(tp == list[str] or (typing is not None and tp == typing.List[str]))


def _is_dict_of_str(tp: Any) -> bool:
    typing = sys.modules.get("typing")
    return bool(tp == dict[str, str] or (typing is not None and tp == typing.Dict[str, str]))


@dataclass
class runopt:
    """One run option: its default, type, whether it is required and its help text."""

    default: CfgVal
    opt_type: Any
    is_required: bool
    help: str

    @property
    def is_type_list_of_str(self) -> bool:
        """Whether the option holds a ``list[str]`` (``List[str]`` too)."""
        return _is_list_of_str(self.opt_type)

    @property
    def is_type_dict_of_str(self) -> bool:
        """Whether the option holds a ``dict[str, str]`` (``Dict[str, str]`` too)."""
        return _is_dict_of_str(self.opt_type)

    def cast_to_type(self, value: str) -> CfgVal:
        """Converts the string form of a value (as typed on the CLI) to the option type.

        Args:
            value: the text: ``true``/``false`` (and ``1``/``0``, ``yes``/``no``,
                ``on``/``off``) for a bool, ``a,b`` or ``a;b`` for a list, ``k:v,k2:v2``
                for a dict.

        Returns:
            The typed value.

        Raises:
            ValueError: the text is not a value of the option's type.
        """
        opt_type = self.opt_type
        if opt_type is None:
            raise ValueError(f"cannot cast {value!r}: this run option has no type")
        if opt_type is bool:
            word = value.strip().lower()
            if word in _TRUE_WORDS:
                return True
            if word in _FALSE_WORDS:
                return False
            raise ValueError(
                f"invalid boolean {value!r}; accepted values (any case):"
                f" {'/'.join(_TRUE_WORDS)} or {'/'.join(_FALSE_WORDS)}"
            )
        if self.is_type_list_of_str:
            return [item for item in value.replace(";", ",").split(",") if item]
        if self.is_type_dict_of_str:
            result: dict[str, str] = {}
            for item in value.replace(";", ",").split(","):
                if not item:
                    continue
                key, sep, val = item.partition(":")
                if not sep:
                    raise ValueError(
                        f"invalid dict entry {item!r} in {value!r}; expected KEY:VALUE pairs"
                        " separated by ',' or ';'"
                    )
                result[key] = val
            return result
        if opt_type in (int, float):
            try:
                return opt_type(value)  # type: ignore[no-any-return]
            except ValueError:
                raise ValueError(
                    f"invalid {opt_type.__name__} value {value!r}; expected a number"
                ) from None
        return opt_type(value)  # type: ignore[no-any-return]


class runopts:
    """The run options of a scheduler, in declaration order.

    ``repr()`` is the text ``torchx runopts`` prints. Lookups accept the camelCase spelling of
    a snake_case key (``clusterName`` finds ``cluster_name``).
    """

    def __init__(self) -> None:
        self._opts: dict[str, runopt] = {}

    def __iter__(self) -> Iterator[tuple[str, runopt]]:
        return iter(self._opts.items())

    def __len__(self) -> int:
        return len(self._opts)

    def __or__(self, other: runopts) -> runopts:
        merged = runopts()
        merged._opts = {**self._opts, **other._opts}
        return merged

    @staticmethod
    def is_type(obj: CfgVal, tp: Any) -> bool:
        """``isinstance`` that understands ``list[str]``/``dict[str, str]`` option types.

        Args:
            obj: the value.
            tp: the option type.

        Returns:
            Whether ``obj`` is a value of ``tp`` (a bool is no int, an int is a float).
        """
        if _is_list_of_str(tp):
            return isinstance(obj, list) and all(isinstance(e, str) for e in obj)
        if _is_dict_of_str(tp):
            return isinstance(obj, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in obj.items()
            )
        if tp in (int, float) and isinstance(obj, bool):
            return False  # bool subclasses int, but True is never a sensible count
        if tp is float and isinstance(obj, int):
            return True
        try:
            return isinstance(obj, tp)
        except TypeError:
            if isinstance(obj, list):
                return all(isinstance(e, str) for e in obj)
            if isinstance(obj, dict):
                return all(isinstance(k, str) and isinstance(v, str) for k, v in obj.items())
            return False

    def add(
        self,
        cfg_key: str,
        type_: Any,
        help: str,
        default: CfgVal = None,
        required: bool = False,
    ) -> None:
        """Declares (or re-declares) an option.

        Args:
            cfg_key: the option's name.
            type_: its type (``str``, ``int``, ``float``, ``bool``, ``list[str]``,
                ``dict[str, str]``).
            help: one line for ``torchx runopts``.
            default: its value when not given.
            required: whether it must be given (then it has no default).

        Raises:
            ValueError: a required option with a default.
            TypeError: a default that is not of the option's type.
        """
        if required and default is not None:
            raise ValueError(
                f"Required option {cfg_key!r} must not have a default (given {default!r});"
                " drop the default or make it optional"
            )
        if default is not None and not runopts.is_type(default, type_):
            raise TypeError(
                f"Option {cfg_key!r}: default {default!r} is not of type {get_type_name(type_)}"
            )
        self._opts[cfg_key] = runopt(default, type_, required, help)

    def update(self, other: runopts) -> None:
        """Adds every option of ``other`` (``other`` wins on a name clash).

        Args:
            other: the options to add.
        """
        self._opts.update(other._opts)

    def _key_of(self, name: str) -> str | None:
        if name in self._opts:
            return name
        snake = cases.camel_to_snake(name)
        return snake if snake in self._opts else None

    def canonical_key(self, name: str) -> str:
        """The declared name of the option ``name`` spells (``serviceAccount`` ->
        ``service_account``); ``name`` itself when no option has that name.

        Args:
            name: an option's name, snake_case or camelCase.

        Returns:
            The option's own key, or ``name``.
        """
        return self._key_of(name) or name

    def get(self, name: str) -> runopt | None:
        """The option named ``name`` (or its camelCase spelling), else ``None``.

        Args:
            name: the option's name.

        Returns:
            The :class:`runopt`, or ``None``.
        """
        key = self._key_of(name)
        return self._opts[key] if key is not None else None

    def unknown_key_message(self, key: str) -> str:
        """``unknown run option 'KEY' (did you mean 'NEAREST'?); accepted: ...``."""
        import difflib

        names = list(self._opts)
        close = difflib.get_close_matches(key, names, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"unknown run option '{key}'{hint}; accepted: {', '.join(names) or '<none>'}"

    def canonical(
        self, cfg: Mapping[str, CfgVal], *, ignore_unknown: bool = False
    ) -> dict[str, CfgVal]:
        """``cfg`` with every key spelled as its option declares it. An option given under
        two spellings with different values is refused, and so is a key no option has,
        unless ``ignore_unknown`` (then it passes through as it is).

        Raises:
            InvalidRunConfigException: an unknown key, or two values for one option.
        """
        found: dict[str, CfgVal] = {}
        spelled: dict[str, str] = {}
        for name, value in cfg.items():
            key = self._key_of(name)
            if key is None:
                if not ignore_unknown:
                    raise InvalidRunConfigException(self.unknown_key_message(name), name, cfg)
                key = name
            if key in found and found[key] != value:
                raise InvalidRunConfigException(
                    f"run option {key!r} is given twice, as {spelled[key]!r}={found[key]!r}"
                    f" and as {name!r}={value!r}; give it once",
                    key,
                    cfg,
                )
            found[key], spelled[key] = value, name
        return found

    def resolve(
        self, cfg: Mapping[str, CfgVal], *, ignore_unknown: bool = False
    ) -> dict[str, CfgVal]:
        """Returns a validated copy of ``cfg`` with defaults filled in.

        A camelCase key is renamed to its snake_case option (the same option under two
        spellings with different values is refused). Defaults fill only ABSENT keys: an
        explicit ``None`` stays ``None``. A key no option has is refused, naming the
        nearest option, unless ``ignore_unknown`` (a facade scheduler handing keys on to
        another), which passes it through untouched.

        Args:
            cfg: the given options.
            ignore_unknown: pass unknown keys through instead of refusing them.

        Returns:
            A new dict: every option, given or defaulted.

        Raises:
            InvalidRunConfigException: an unknown key, an option given twice, a required
                option missing, or a value not of its option's type.
        """
        resolved = self.canonical(cfg, ignore_unknown=ignore_unknown)
        for key, opt in self._opts.items():
            if key not in resolved:
                if opt.is_required:
                    raise InvalidRunConfigException(
                        f"Required run option: {key}, must be provided and not `None`",
                        key,
                        cfg,
                    )
                resolved[key] = opt.default
                continue
            value = resolved[key]
            if value is None:
                if opt.is_required:
                    raise InvalidRunConfigException(
                        f"Required run option: {key}, must be provided and not `None`",
                        key,
                        cfg,
                    )
                continue
            if not runopts.is_type(value, opt.opt_type):
                raise InvalidRunConfigException(
                    f"Run option: {key}, must be of type: {get_type_name(opt.opt_type)},"
                    f" but was: {value} ({type(value).__name__})",
                    key,
                    cfg,
                )
        return resolved

    def cfg_from_str(self, cfg_str: str | None) -> dict[str, CfgVal]:
        """Parses ``k1=v1,k2=v2`` (CLI ``-cfg``) into typed values.

        A key no option has is refused, naming the nearest option (as upstream's head
        does); a camelCase key is renamed to its option, and one option given under two
        spellings with different values is refused.

        Args:
            cfg_str: the text (``None`` or blank: no options).

        Returns:
            ``{option: typed value}``.

        Raises:
            ValueError: the text is not ``KEY=VALUE`` pairs, or a value does not parse.
            InvalidRunConfigException: an unknown key, or one option given twice.
        """
        if not cfg_str or not cfg_str.strip():
            return {}
        from torchx.util.types import to_dict

        result: dict[str, CfgVal] = {}
        for key, value in self.canonical(to_dict(cfg_str)).items():
            opt = self._opts[key]
            result[key] = opt.cast_to_type(str(value))
        return result

    def cfg_from_json_repr(self, json_repr: str) -> dict[str, CfgVal]:
        """Parses a JSON object of option values; a key no option has is refused (naming
        the nearest), camelCase keys are renamed to their options.

        Args:
            json_repr: the JSON text of an object.

        Returns:
            ``{option: typed value}``.

        Raises:
            ValueError: the text is not a JSON object.
            InvalidRunConfigException: an unknown key, or one option given twice.
        """
        import json

        raw = json.loads(json_repr)
        if not isinstance(raw, dict):
            raise ValueError(f"run config JSON must be an object, got: {json_repr!r}")
        result: dict[str, CfgVal] = {}
        given: dict[str, Any] = self.canonical(raw)
        for key, value in given.items():
            opt = self._opts[key]
            if value is None:
                result[key] = None
            elif opt.is_type_list_of_str:
                result[key] = [str(v) for v in value]
            elif opt.is_type_dict_of_str:
                result[key] = {str(k): str(v) for k, v in value.items()}
            else:
                result[key] = value
        return result

    def __repr__(self) -> str:
        required = [(k, o) for k, o in self._opts.items() if o.is_required]
        optional = [(k, o) for k, o in self._opts.items() if not o.is_required]
        usage = ",".join(
            f"{k}={k.upper()}" if o.is_required else f"[{k}={k.upper()}]"
            for k, o in required + optional
        )
        out = "    usage:\n        " + usage
        for title, opts in (("required", required), ("optional", optional)):
            if not opts:
                continue
            out += f"\n\n    {title} arguments:"
            for key, opt in opts:
                default = "" if opt.is_required else f", {opt.default}"
                out += f"\n        {key}={key.upper()} ({get_type_name(opt.opt_type)}{default})"
                out += f"\n            {opt.help}"
        return out
