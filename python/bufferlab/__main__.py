"""`python -m bufferlab` is the `bufferlab` command."""

from .cli import command_line

command_line()
