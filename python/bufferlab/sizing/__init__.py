"""Buffer sizing: the rules of the seeds (BDP, Stanford, seed 003's single-flow bound, SplitBuff's
eq. (4)) and the `bufferlab size` command."""

from .rules import BufferSize, bdp, single_flow, splitbuff_split, stanford

__all__ = ["BufferSize", "bdp", "stanford", "single_flow", "splitbuff_split"]
