"""The start-up room (docstring written below)."""
