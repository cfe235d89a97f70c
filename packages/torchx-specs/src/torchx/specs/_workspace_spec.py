"""``Workspace``: the local directories that are shipped along with a role's image."""

import os

from torchx.util.lazy_dataclass import dataclass


def _parse_scalar(text: str) -> str | None:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    return text


def _parse_mapping_by_hand(text: str) -> dict[str, str] | None:
    """Parses ``{a: b, c: d}`` or ``a: b`` lines (the forms the CLI documents) without YAML."""
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        items = [i for i in stripped[1:-1].split(",") if i.strip()]
    elif ": " in stripped or stripped.endswith(":") or ":\n" in stripped:
        items = [line for line in stripped.splitlines() if line.strip()]
    else:
        return None
    projects: dict[str, str] = {}
    for item in items:
        if item.lstrip().startswith("#"):
            continue
        key, sep, value = item.partition(": ")
        if not sep:
            key, sep, value = item.rstrip().rpartition(":")
            if not sep or value:
                raise ValueError(
                    f"invalid workspace entry {item.strip()!r} in {text!r}; expected"
                    " 'LOCAL_PATH: TARGET_DIR' entries"
                )
        name = _parse_scalar(key)
        if not name:
            raise ValueError(f"invalid workspace entry {item.strip()!r}: empty local path")
        projects[name] = _parse_scalar(value) or ""
    return projects


@dataclass(eq=False)
class Workspace:
    """Local paths (keys) copied into sub-directories (values) of the remote workspace root.

    ``""`` as a target means the root. ``Workspace({"~/proj": ""})`` is the common case of a
    single project mapped to the root.
    """

    projects: dict[str, str]

    def __bool__(self) -> bool:
        return bool(self.projects)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Workspace):
            return NotImplemented
        return self.projects == other.projects

    def __hash__(self) -> int:
        return hash(frozenset(self.projects.items()))

    def is_unmapped_single_project(self) -> bool:
        """True for one project copied to the root (usable as a plain build directory)."""
        return len(self.projects) == 1 and not next(iter(self.projects.values()))

    def merge_into(self, outdir: str | os.PathLike[str]) -> None:
        """Copies every project into ``outdir/<target>``: directories as the workspace
        copy does (links kept as links, special files left out), single files with their
        metadata. Ignore files apply later, to the merged directory."""
        import shutil

        from torchx.workspace.dir_workspace import copy_workspace, is_url

        for src, target in self.projects.items():
            source = os.path.expanduser(src)
            dest = os.path.join(os.fspath(outdir), target)
            if is_url(src) or os.path.isdir(source):  # a URL imports fsspec, only then
                os.makedirs(dest, exist_ok=True)
                copy_workspace(src if is_url(src) else source, dest, ignore_name=None)
            elif os.path.exists(source):
                if target:
                    os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
                else:
                    dest = os.path.join(os.fspath(outdir), os.path.basename(source))
                shutil.copy2(source, dest)
            else:
                raise FileNotFoundError(
                    f"workspace project {src!r} does not exist; check the --workspace value"
                )

    @staticmethod
    def from_str(workspace: str | None) -> "Workspace":
        """Parses ``PATH``, ``{PATH: TARGET, ...}`` or multi-line ``PATH: TARGET`` text.

        YAML is used when PyYAML is installed; otherwise the documented forms are parsed by hand.
        """
        if not workspace or not workspace.strip():
            return Workspace({})
        try:
            import yaml  # noqa: F401 - PyYAML is optional: the documented forms parse without it
        except ImportError:
            projects = _parse_mapping_by_hand(workspace)
            if projects is None:
                return Workspace({workspace.strip(): ""})
            return Workspace(projects)
        from torchx.util.safe_yaml import load_yaml

        parsed = load_yaml(workspace, "the workspace")
        if parsed is None:
            return Workspace({})
        if isinstance(parsed, dict):
            return Workspace({str(k): "" if v is None else str(v) for k, v in parsed.items()})
        if isinstance(parsed, (str, int, float)):
            return Workspace({workspace.strip(): ""})
        raise ValueError(
            f"invalid workspace {workspace!r}; expected a path or a mapping"
            " {LOCAL_PATH: TARGET_DIR, ...}"
        )

    def __str__(self) -> str:
        if self.is_unmapped_single_project():
            return next(iter(self.projects))
        return ";".join(f"{k}:{v}" if v else k for k, v in self.projects.items())
