"""`python -m bufferlab` is the `bufferlab` command."""

from .entry import main

main()
