"""Copies one file between fsspec URLs; the program run by the ``utils.copy`` component.

Usage: ``python -m torchx.apps.utils.copy_main --src s3://b/a.txt --dst /tmp/a.txt``
"""

from __future__ import annotations

import argparse
import logging
import sys

logger: logging.Logger = logging.getLogger(__name__)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="copy one file between fsspec URLs")
    parser.add_argument("--src", type=str, required=True, help="URL or path to copy from")
    parser.add_argument("--dst", type=str, required=True, help="URL or path to copy to")
    parser.add_argument(
        "--bufsize", type=int, default=64 * 1024, help="chunk size when streaming (bytes)"
    )
    return parser.parse_args(argv)


def copy(src: str, dst: str, bufsize: int = 64 * 1024) -> None:
    """Copies ``src`` to ``dst``, creating ``dst``'s parent directory.

    Within one filesystem the filesystem's own copy is used (server-side on object
    stores); across filesystems the bytes are streamed in ``bufsize`` chunks.
    """
    import fsspec

    src_fs, src_path = fsspec.core.url_to_fs(src)
    dst_fs, dst_path = fsspec.core.url_to_fs(dst)
    if not src_fs.isfile(src_path):
        raise FileNotFoundError(f"--src {src} is not a file (directories are not supported)")
    parent = dst_path.rsplit("/", 1)[0] if "/" in dst_path else ""
    if parent:
        dst_fs.makedirs(parent, exist_ok=True)
    if src_fs == dst_fs:
        src_fs.copy(src_path, dst_path)
        return
    with src_fs.open(src_path, "rb") as fin, dst_fs.open(dst_path, "wb") as fout:
        while chunk := fin.read(bufsize):
            fout.write(chunk)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    logger.info("copying %s to %s", args.src, args.dst)
    copy(args.src, args.dst, args.bufsize)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main(sys.argv[1:])
