"""``Workspace``: the local directories that are shipped along with a role's image."""

import os
import posixpath
import stat

from torchx.util.startup.lazy_dataclass import dataclass


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


def check_target(src: str, target: str) -> str:
    """``target`` of the workspace entry ``src`` as a clean relative path ("" for the
    root); refuses one that is absolute or climbs out of the workspace copy."""

    text = target.replace("\\", "/").strip()
    normal = posixpath.normpath(text) if text else ""
    if posixpath.isabs(text) or normal == ".." or normal.startswith("../") or "\0" in text:
        raise ValueError(
            f"workspace entry {src!r}: target {target!r} is outside the workspace copy;"
            " use a relative directory inside it (such as 'lib/extra'), or '' for its root"
        )
    return "" if normal == "." else normal


def _inside(root: str, relative: str, src: str) -> str:
    """``root/relative`` made as real directories (mode 0700); refuses a link on the way,
    which an earlier project of the same workspace may have brought."""
    path = root
    for part in [p for p in relative.split("/") if p]:
        path = os.path.join(path, part)
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
            raise ValueError(
                f"workspace entry {src!r}: {relative!r} in the workspace copy is a link or a"
                " file brought by another entry; map it to another target"
            )
        if not os.path.lexists(path):
            os.mkdir(path, 0o700)
    return path


def _copy_single_file(src: str, source: str, dest: str) -> None:
    """A mapped single file, by the rules of a directory copy: a link is kept as a link
    (never followed), devices, FIFOs and sockets are refused, the size limit counts it."""

    from torchx.workspace._files import WorkspaceProgress, copy_into_new_file

    info = os.lstat(source)
    if stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(source), dest)
        return
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(
            f"workspace entry {src!r} is a device, FIFO or socket, not a regular file;"
            " map a regular file or a directory"
        )
    progress = WorkspaceProgress(src, "copying")
    progress.reserve(info.st_size, source)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(source, flags)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # swapped since the lstat
            raise ValueError(f"workspace entry {src!r} is not a regular file")
        copy_into_new_file(f, dest, progress, source)
    os.chmod(dest, (info.st_mode & 0o700) or 0o600)
    progress.done()


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
        copy does (links kept as links, special files left out), single files by the same
        rules (a link stays a link, the size limit counts them). Targets stay inside
        ``outdir``: they are checked again here, and no link (one a project brought) is
        ever followed on the way. Ignore files apply later, to the merged directory."""
        from torchx.workspace._files import copy_workspace, is_url

        root = os.fspath(outdir)
        for src, raw_target in self.projects.items():
            target = check_target(src, raw_target)
            source = os.path.expanduser(src)
            if is_url(src) or os.path.isdir(source):  # a URL imports fsspec, only then
                dest = _inside(root, target, src)
                copy_workspace(src if is_url(src) else source, dest, ignore_name=None)
            elif os.path.lexists(source):
                if not target:
                    target = os.path.basename(source)
                parent, _, name = target.rpartition("/")
                _copy_single_file(src, source, os.path.join(_inside(root, parent, src), name))
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
            return Workspace({k: check_target(k, v) for k, v in projects.items()})
        from torchx.util.support.safe_yaml import load_yaml

        parsed = load_yaml(workspace, "the workspace")
        if parsed is None:
            return Workspace({})
        if isinstance(parsed, dict):
            return Workspace(
                {
                    str(k): check_target(str(k), "" if v is None else str(v))
                    for k, v in parsed.items()
                }
            )
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
