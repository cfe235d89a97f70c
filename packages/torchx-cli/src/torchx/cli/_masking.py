"""The log format of the ``torchx`` command, with credentials masked."""

import logging

from torchx.util.support.secrets import mask_text

__all__ = ["MaskingFormatter"]


class MaskingFormatter(logging.Formatter):
    """Every log line the CLI shows, a library's too (botocore's retry warnings name the
    endpoint URL, user-info included), goes through the one masking rule of
    :mod:`torchx.util.support.secrets`."""

    def format(self, record: logging.LogRecord) -> str:
        return mask_text(super().format(record))
