"""The command line: ``projmech release``, ``demo``, ``audit`` and the rest (``projmech --help``)."""

from __future__ import annotations

from .commands import main

__all__ = ["main"]
