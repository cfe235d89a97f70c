"""The pieces of ``ray`` (private): the Jobs REST client, the job request and its upload, status
from driver events, the in-cluster driver, ``torchx check`` probes.
"""
