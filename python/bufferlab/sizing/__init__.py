"""Buffer sizing: the rules of the seeds (BDP, Stanford, seed 003's single-flow bound, SplitBuff's
eq. (4), `size_rows`), queue sizes resolved from them (`resolve`), and the advisor that finds a
buffer by simulation (`advisor`, its targets in `targets`). The commands are in `bufferlab.cli`."""

from .rules import BufferSize, bdp, single_flow, splitbuff_split, stanford

__all__ = ["BufferSize", "bdp", "stanford", "single_flow", "splitbuff_split"]
