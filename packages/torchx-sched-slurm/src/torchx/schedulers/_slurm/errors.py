"""The base of the errors Slurm's commands raise, apart so that the modules running them
(``commands`` here, ``ssh`` on a login node) share it without importing each other."""

__all__ = ["SlurmCommandError"]


class SlurmCommandError(Exception):
    """A Slurm command failed; the message is Slurm's own error, in one line."""
