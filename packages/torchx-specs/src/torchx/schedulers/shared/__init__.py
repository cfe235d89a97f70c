"""Helpers several schedulers share (label keys, log-file following, resuming a followed log);
not part of the plugin contract.
"""
