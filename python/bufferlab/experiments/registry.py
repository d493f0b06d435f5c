"""Every reproduction, by name (imported on demand: `bufferlab --help` stays instant)."""

from __future__ import annotations

from .base import Reproduction

__all__ = ["reproductions"]


def reproductions() -> dict[str, Reproduction]:
    from .appenzeller2004 import REPRODUCTION as appenzeller2004
    from .barman2004 import REPRODUCTION as barman2004
    from .bufferbloat import REPRODUCTION as bufferbloat
    from .ccperf import REPRODUCTION as ccperf
    from .dhamdhere2006 import REPRODUCTION as dhamdhere2006
    from .enachescu2006 import REPRODUCTION as enachescu2006
    from .l4s import REPRODUCTION as l4s
    from .quic_sizing import REPRODUCTION as quic_sizing
    from .spang2021 import REPRODUCTION as spang2021
    from .splitbuff import REPRODUCTION as splitbuff
    from .ware2019 import REPRODUCTION as ware2019

    return {r.name: r for r in (dhamdhere2006, ccperf, splitbuff, quic_sizing, barman2004, appenzeller2004,
                                       bufferbloat, spang2021, enachescu2006, ware2019, l4s)}
