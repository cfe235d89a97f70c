"""Helpers used *inside* running TorchX apps (as opposed to the launcher side)."""
