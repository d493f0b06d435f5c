"""experiments: the seeds' experiments, one command each (`bufferlab reproduce NAME`).

Each module holds one reproduction: its sweeps (quick and at the seed's scale), the seed's
observations evaluated on the stored runs, and its figures. `registry.reproductions()` lists them
by name; `base.reproduce` runs one.
"""
