"""Tracker backends shipped with TorchX (``fsspec``); others register ``torchx.tracker``."""
