"""The pieces of ``aws_batch`` (private): boto3 clients, job definitions, job state, CloudWatch
logs, ``torchx check`` probes.
"""
