"""The `bufferlab` command's entry point (the console script and ``python -m bufferlab``)."""

from __future__ import annotations

from .cli import command_line as main

__all__ = ["main"]
