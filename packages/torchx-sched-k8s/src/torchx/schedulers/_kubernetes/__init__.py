"""The pieces of ``kubernetes`` (private): rendering jobs, the API client seam, status from
objects, the YAML writer, ``torchx check`` probes.
"""
