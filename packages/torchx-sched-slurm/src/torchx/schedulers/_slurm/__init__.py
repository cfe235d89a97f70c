"""The pieces of ``slurm`` (private): requests and batch scripts, pre-queue validation, job
records, Slurm commands and their output, status, ``torchx check`` probes.
"""
