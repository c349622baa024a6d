"""What every part of the command line shares: its name and the error it reports."""

from __future__ import annotations

__all__ = ["PROG", "CLIError"]

PROG = "river-doebe"


class CLIError(Exception):
    """A user error: reported as ``error: <message>`` with exit status 2."""
