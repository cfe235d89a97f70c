"""The pieces of ``local_docker`` (private): the light Engine API client, log following, outage
retries, ``torchx check`` probes.
"""
