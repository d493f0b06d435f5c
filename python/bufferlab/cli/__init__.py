"""The `bufferlab` command: one module per command, each of which parses its options, calls the
library and renders what it returns.

    bufferlab run SCENARIO.toml [--db PATH] [--force] [--json] [--seed N] [--study NAME] [--metrics]
    bufferlab check SCENARIO.toml [--set KEY=VALUE]                                      (run.py)
    bufferlab ccperf --bw=80Mbps --rtts=15ms,15ms --qlen=10p ... [--db PATH] [--json]    (ccperf.py)
    bufferlab results list|show|query|export|monitor|csv|pcap ... [--db PATH]            (results.py)
    bufferlab size --rate 100Mbps --rtt 10ms,990ms [--flows N] [--packet 1500B] [--json] (size.py)
    bufferlab advise --rate 100Mbps --flows 20 --rtt 20ms..200ms --target 'utilisation>=0.98'  (advise.py)
    bufferlab plot KIND RUN... [-o FILE.pdf|.svg|.png] [--flows ...] [--from T --to T]  (plot.py)
    bufferlab sweep SWEEP.toml [--workers N] [--dask local|tcp://HOST:PORT]
    bufferlab results study NAME                                                         (sweep.py)
    bufferlab reproduce NAME [--quick] | --list                                          (reproduce.py)
    bufferlab report [DB] [-o DIR]        bufferlab serve [DB] [--port N]                (report.py)

What they share: the group, the error boundary and the process (`app`), the common options
(`options`), progress bars (`progress`), rich output (`render`) and a run's metric tables
(`metrics`).

Start-up is kept instant: `app` imports only click and light modules, each command's module is
imported when that command is asked for (`lazy`), and pydantic, polars, numpy, DuckDB and rich
are imported inside the commands that use them (`bufferlab._lazy`).
"""

from .app import command_line, main

__all__ = ["main", "command_line"]
