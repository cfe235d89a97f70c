"""Image workspaces: patch a role's image with the local workspace on every run.

Used by every scheduler that runs images (``local_docker``, ``kubernetes``, ``aws_batch``),
so it is a distribution of its own (``torchx-workspace-docker``) that each of them depends
on. It imports the ``docker`` SDK only when an image is actually built, inspected or
pushed: each scheduler package that offers image workspaces declares ``docker`` itself.

What a build does:

* The build context is the workspace directory minus what its ``.dockerignore`` excludes,
  plus a default ``Dockerfile.torchx`` (``FROM $IMAGE`` / ``COPY . .``) when the workspace
  has none. The build arguments are ``IMAGE`` (the role's image), ``WORKSPACE`` (the local
  path) and the ``build_args`` run option (e.g. a private package index).
* The context is packed reproducibly (no mtimes or owners) and hashed together with the
  base images' ids and the build arguments. An image built earlier from the same hash is
  reused without a build: running again from an unchanged directory costs one hash.
* The role's image is pulled only when the Dockerfile builds ``FROM $IMAGE`` and the image
  is not present locally; a ``Dockerfile.torchx`` that names another base never pulls it.
* The built image's id (``sha256:...``) replaces ``role.image``; remote schedulers then push
  it to ``image_repo`` with :meth:`DockerWorkspaceMixin.dryrun_push_images` and
  :meth:`DockerWorkspaceMixin.push_images`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import re
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from typing import IO, Any

from torchx.schedulers.shared import labels
from torchx.specs.api import AppDef, CfgVal, Role, runopts
from torchx.util.log import ensure_configured, get_logger
from torchx.util.strings import connection_problem
from torchx.version import __version__
from torchx.workspace.api import (
    LocalFileSystem,
    WorkspaceMixin,
    WorkspaceProgress,
    walk_workspace,
)
from torchx.workspace.dir_workspace import copy_workspace, is_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    import docker

__all__ = [
    "DEFAULT_DOCKERFILE",
    "LABEL_VERSION",
    "LABEL_WORKSPACE_HASH",
    "TORCHX_DOCKERFILE",
    "DockerUnavailableError",
    "DockerWorkspaceMixin",
    "ImageUnavailableError",
    "WorkspaceBuildError",
    "build_context",
    "connect_docker",
    "daemon_unavailable",
    "docker_sdk",
    "ensure_image",
    "local_image_id",
    "print_push_events",
]

logger = get_logger(__name__)

LABEL_VERSION = labels.VERSION
LABEL_WORKSPACE_HASH = labels.WORKSPACE_HASH
TORCHX_DOCKERFILE = "Dockerfile.torchx"
DOCKER_IGNORE = ".dockerignore"
DEFAULT_DOCKERFILE = b"""ARG IMAGE
FROM $IMAGE

COPY . .
"""

_FROM_IMAGE = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE | re.MULTILINE)
_USES_IMAGE_ARG = re.compile(r"\$\{?IMAGE\}?")


class DockerUnavailableError(RuntimeError):
    """The Docker daemon cannot be reached (not running, no permission, bad DOCKER_HOST)."""


class ImageUnavailableError(RuntimeError):
    """An image is neither present on the Docker host nor pullable."""


class WorkspaceBuildError(RuntimeError):
    """``docker build`` of a workspace failed (the message carries Docker's reason)."""


def _daemon_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _short_reason(exc: BaseException) -> str:
    if "No such file or directory" in str(exc):
        return "no daemon socket there"

    return connection_problem(exc)


def daemon_unavailable(exc: BaseException, address: str | None = None) -> DockerUnavailableError:
    """The one-line error for a daemon that ``exc`` says cannot be reached at ``address``."""
    reason = _short_reason(exc)
    hint = (
        "add your user to the `docker` group (or run as root)"
        if reason == "permission denied"
        else "start it (`sudo systemctl start docker`, or run `dockerd`)"
    )
    return DockerUnavailableError(
        f"cannot reach the Docker daemon at {address or _daemon_address()} ({reason}); {hint},"
        " or set DOCKER_HOST to a running daemon"
    )


def docker_sdk() -> Any:
    """The ``docker`` package (with ``docker.errors``), imported on first use: the one place
    TorchX imports the docker SDK. Missing, it is one :class:`DockerUnavailableError` line
    saying what to install."""

    ensure_configured()  # the SDK (and urllib3 under it) log through logging itself
    try:
        import docker
        import docker.errors
    except ImportError as e:
        raise DockerUnavailableError(
            "the `docker` Python package is not installed; install it with"
            " `pip install docker` (or install torchx-sched-docker)"
        ) from e
    return docker


def connect_docker() -> docker.DockerClient:
    """A client of the Docker daemon from the environment (``DOCKER_HOST`` & co).

    Raises :class:`DockerUnavailableError` with one line saying what to do when the
    daemon cannot be reached, instead of the SDK's nested connection errors.
    """
    sdk = docker_sdk()
    try:
        client: docker.DockerClient = sdk.from_env()
        client.ping()
    except Exception as e:  # the SDK raises DockerException, requests errors or OSError
        raise daemon_unavailable(e) from e
    return client


class _HashingWriter(io.RawIOBase):
    """Writes through to ``sink`` while hashing what passes."""

    def __init__(self, sink: IO[bytes]) -> None:
        self.sink = sink
        self.digest = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.digest.update(view)
        self.sink.write(view)
        return len(view)


def _reproducible(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def build_context(workspace: str) -> tuple[IO[bytes], str, bytes]:
    """Packs ``workspace`` into a build context (a tar).

    Returns the tar (a seekable file at position 0), the sha256 of its bytes and the
    Dockerfile used (the workspace's ``Dockerfile.torchx`` or :data:`DEFAULT_DOCKERFILE`).
    Entries are sorted and stripped of mtimes and owners, so the hash changes only when
    a file's path, mode or content does. ``.dockerignore`` rules apply.
    """
    root = os.path.abspath(os.path.expanduser(workspace))
    if not os.path.isdir(root):
        raise NotADirectoryError(
            f"workspace {workspace!r} is not a directory; pass an existing directory with"
            " --workspace (or '' to run the image as it is)"
        )
    sink: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115
    writer = _HashingWriter(sink)
    dockerfile: bytes | None = None
    progress = WorkspaceProgress(workspace, "packing")
    with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for directory, dirs, files in walk_workspace(LocalFileSystem(), root, DOCKER_IGNORE):
            rel_dir = os.path.relpath(directory, root)
            if rel_dir != ".":
                tar.addfile(_reproducible(tar.gettarinfo(directory, rel_dir)))
            del dirs
            for name in sorted(files):
                path = os.path.join(directory, name)
                arcname = name if rel_dir == "." else posixpath.join(rel_dir, name)
                info = _reproducible(tar.gettarinfo(path, arcname))  # lstat: links stay links
                progress.add_file(path)
                if info.isreg():
                    progress.add_bytes(info.size, path)
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                    if arcname == TORCHX_DOCKERFILE:
                        with open(path, "rb") as f:
                            dockerfile = f.read()
                elif info.issym() or info.isdir():
                    tar.addfile(info)
        if dockerfile is None:
            dockerfile = DEFAULT_DOCKERFILE
            info = _reproducible(tarfile.TarInfo(TORCHX_DOCKERFILE))
            info.size = len(dockerfile)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(dockerfile))
    progress.done()
    sink.seek(0)
    return sink, writer.digest.hexdigest(), dockerfile


def _declared_args(dockerfile: bytes) -> set[str]:
    """The names the Dockerfile declares with ``ARG`` (``ARG NAME`` or ``ARG NAME=default``)."""
    text = dockerfile.decode("utf-8", errors="replace")
    return set(
        re.findall(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)", text, re.MULTILINE | re.IGNORECASE)
    )


def _base_images(dockerfile: bytes, image: str) -> tuple[list[str], bool]:
    """The ``FROM`` images of ``dockerfile`` (``$IMAGE`` resolved) and whether it uses IMAGE."""
    text = dockerfile.decode("utf-8", errors="replace")
    bases: list[str] = []
    uses_image = False
    for match in _FROM_IMAGE.finditer(text):
        name = match.group(1)
        if _USES_IMAGE_ARG.search(name):
            uses_image = True
            name = _USES_IMAGE_ARG.sub(image, name)
        bases.append(name)
    return bases, uses_image


def local_image_id(api: Any, name: str) -> str | None:
    """The id of image ``name`` on the daemon, or ``None``; ``api`` is the SDK's low-level
    ``APIClient`` or any client with the same ``inspect_image``."""
    try:
        info: dict[str, Any] = api.inspect_image(name)
    except Exception as e:  # the SDK's ImageNotFound/APIError, or a light client's error
        if getattr(e, "status_code", None) == 404:
            return None
        raise
    return str(info["Id"])


def ensure_image(client: docker.DockerClient, image: str) -> str:
    """The id of ``image``, pulling it when it is not on the Docker host.

    Raises :class:`ImageUnavailableError` (one line) when it is neither local nor pullable.
    """
    found = local_image_id(client.api, image)
    if found is not None:
        return found
    errors = docker_sdk().errors
    try:
        logger.info("pulling image %s", image)
        client.images.pull(image)
    except errors.DockerException as e:
        reason = " ".join(str(getattr(e, "explanation", None) or e).split())
        raise ImageUnavailableError(
            f"image {image!r} is not on the Docker host and cannot be pulled ({reason});"
            " build or load it locally (`docker build`/`docker load`), fix the name, or"
            " `docker login` to its registry"
        ) from e
    pulled = local_image_id(client.api, image)
    if pulled is None:
        raise ImageUnavailableError(f"image {image!r} was pulled but is not on the Docker host")
    return pulled


def print_push_events(events: Iterator[Mapping[str, Any]], stream: IO[str] | None = None) -> None:
    """Renders the decoded event stream of ``docker push`` as progress lines on ``stream``.

    One line per layer status change (``<layer>: Pushed``); raises ``RuntimeError`` on an
    error event so a failed push is never mistaken for a successful one.
    """
    out = stream if stream is not None else sys.stderr
    last: dict[str, str] = {}
    for event in events:
        if "error" in event:
            raise RuntimeError(f"image push failed: {event['error']}")
        status = str(event.get("status", ""))
        layer = str(event.get("id", ""))
        if not status or (layer and last.get(layer) == status):
            continue
        if layer:
            last[layer] = status
        progress = event.get("progress") or ""
        line = f"{layer}: {status}" if layer else status
        out.write(f"{line} {progress}".rstrip() + "\n")
        out.flush()


class DockerWorkspaceMixin(WorkspaceMixin[dict[str, tuple[str, str]]]):
    """Builds a role's workspace into a patched image (see the module docstring).

    ``docker_client`` is used when given, else a client from the environment is made on
    first use (:func:`connect_docker`).
    """

    LABEL_VERSION: str = LABEL_VERSION

    def __init__(
        self, *args: Any, docker_client: docker.DockerClient | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.__docker_client = docker_client

    @property
    def _docker_client(self) -> docker.DockerClient:
        if self.__docker_client is None:
            self.__docker_client = connect_docker()
        return self.__docker_client

    def workspace_opts(self) -> runopts:
        opts = runopts()
        opts.add(
            "image_repo",
            type_=str,
            help="(remote jobs) the image repository to push workspace images to,"
            " e.g. registry.example.com/team/trainer",
        )
        opts.add("quiet", type_=bool, default=False, help="don't print the image build log")
        opts.add(
            "build_args",
            type_=dict[str, str],
            help="extra build arguments (ARG) for Dockerfile.torchx, e.g."
            " PIP_INDEX_URL:https://pypi.example.com/simple",
        )
        return opts

    def planned_image(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        """A ``sha256:`` placeholder naming the folder and base, so that push planning
        (``image_repo``) is checked and shown as for a built image."""
        return f"sha256:<workspace {role.workspace} built onto {role.image}>"

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Builds ``workspace`` (a directory, or any fsspec URL) on top of ``role.image``
        and points the role at the result."""

        if not is_url(workspace):
            self._build_directory(role, workspace, workspace, cfg)
            return
        with tempfile.TemporaryDirectory(prefix="torchx_workspace_") as local:
            copy_workspace(workspace, local, DOCKER_IGNORE)  # .dockerignore, as for a folder
            self._build_directory(role, local, workspace, cfg)

    def _build_directory(
        self, role: Role, directory: str, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        api = self._image_api
        context, context_hash, dockerfile = build_context(directory)
        with context:
            bases, uses_image = _base_images(dockerfile, role.image)
            base_ids = {base: local_image_id(api, base) for base in bases}
            if uses_image and base_ids.get(role.image) is None:
                base_ids[role.image] = ensure_image(self._docker_client, role.image)
            extra_args = cfg.get("build_args") or {}
            if not isinstance(extra_args, Mapping):
                raise ValueError(
                    f"build_args must be KEY:VALUE pairs, got {extra_args!r};"
                    " write -cfg build_args=K1:V1,K2:V2"
                )
            build_args = {str(k): str(v) for k, v in extra_args.items()}
            implicit = {"IMAGE": role.image, "WORKSPACE": workspace}
            declared = _declared_args(dockerfile)  # docker warns about args nobody uses
            build_args = {**{k: v for k, v in implicit.items() if k in declared}, **build_args}
            key_doc = {
                "context": context_hash,
                "bases": [(b, base_ids[b]) for b in bases],
                "build_args": sorted(build_args.items()),
            }
            key = hashlib.sha256(json.dumps(key_doc, sort_keys=True).encode()).hexdigest()
            cached = self._find_built_image(key)
            if cached is not None:
                logger.info("workspace %s unchanged: reusing image %s", workspace, cached)
                role.image = cached
                return
            quiet = bool(cfg.get("quiet"))
            image_id = self._build(context, workspace, role.image, build_args, key, quiet)
        role.image = image_id

    def _build(  # noqa: PLR0917
        self,
        context: IO[bytes],
        workspace: str,
        image: str,
        build_args: dict[str, str],
        key: str,
        quiet: bool,
    ) -> str:
        """Runs ``docker build`` of ``context`` (through the SDK); returns the image id."""
        errors = docker_sdk().errors

        if not quiet:
            print(f"torchx: building workspace {workspace} onto {image}", file=sys.stderr)
        failed = f"building workspace {workspace} onto {image} failed"
        image_id: str | None = None
        try:
            for event in self._docker_client.api.build(
                fileobj=context,
                custom_context=True,
                dockerfile=TORCHX_DOCKERFILE,
                buildargs=build_args,
                labels={LABEL_VERSION: __version__, LABEL_WORKSPACE_HASH: key},
                pull=False,
                rm=True,
                forcerm=True,
                decode=True,
            ):
                if "error" in event:
                    raise WorkspaceBuildError(f"{failed}: {' '.join(str(event['error']).split())}")
                text = event.get("stream")
                if text and not quiet:
                    sys.stderr.write(text)
                aux = event.get("aux")
                if isinstance(aux, dict) and "ID" in aux:
                    image_id = str(aux["ID"])
        except errors.APIError as e:
            reason = " ".join(str(e.explanation or e).split())
            raise WorkspaceBuildError(f"{failed}: {reason}") from e
        if image_id is None:
            raise RuntimeError(f"building workspace {workspace} finished without an image id")
        return image_id

    @property
    def _image_api(self) -> Any:
        """The low-level API used to look images up (``inspect_image``, ``images``).

        The SDK's ``APIClient`` here; a scheduler with a lighter client of the same calls
        overrides this, so an unchanged workspace costs no SDK import.
        """
        return self._docker_client.api

    def _find_built_image(self, key: str) -> str | None:
        images: list[dict[str, Any]] = self._image_api.images(
            filters={"label": f"{LABEL_WORKSPACE_HASH}={key}"}
        )
        for image in sorted(images, key=lambda i: int(i.get("Created") or 0), reverse=True):
            return str(image["Id"])
        return None

    def dryrun_push_images(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> dict[str, tuple[str, str]]:
        """Renames every role running a locally built image (``sha256:...``) to
        ``<image_repo>:<hash>`` and returns ``{local id: (repo, tag)}`` for :meth:`push_images`.
        """
        images: dict[str, tuple[str, str]] = {}
        for role in app.roles:
            if not role.image.startswith("sha256:"):
                continue
            repo = cfg.get("image_repo")
            if not repo:
                raise KeyError(
                    f"role `{role.name}` runs a locally built workspace image; set the"
                    " `image_repo` run option (-cfg image_repo=registry/repo) so it can be"
                    " pushed where the scheduler can pull it"
                )
            tag = role.image.removeprefix("sha256:")
            images[role.image] = (str(repo), tag)
            role.image = f"{repo}:{tag}"
        return images

    def push_images(self, images_to_push: dict[str, tuple[str, str]], quiet: bool = False) -> None:
        """Tags and pushes the images planned by :meth:`dryrun_push_images`, with progress
        (none when ``quiet``, the run option that also silences the build log)."""
        client = self._docker_client
        out: IO[str] = io.StringIO() if quiet else sys.stderr  # errors still raise when quiet
        for local, (repo, tag) in images_to_push.items():
            print(f"torchx: pushing {repo}:{tag}", file=out)
            client.api.tag(local, repo, tag)
            print_push_events(client.api.push(repo, tag, stream=True, decode=True), out)
