"""The pieces of ``local_cwd`` (private): app state on disk, the supervisor process, GPU
assignment, ``torchx check`` probes.
"""
