"""The version number shared by every torchx distribution, in a module that imports
nothing (so that any module may read it without an import cycle).

Bump it with ``python tools/bump_version.py NEW_VERSION``; that tool also rewrites the
inter-package dependency pins so all distributions move in lockstep.
"""

__version__ = "0.8.0"
