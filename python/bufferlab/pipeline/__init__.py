"""pipeline: one run as four steps that each know only the one before (docs/development/design.md,
"The pipeline").

    plan      Scenario -> Plan: resolved engine spec, validated once, with its run id
    simulate  Plan -> RawRun: the engine's result (pure: no store; the GIL is released)
    derive    RawRun -> Derived: metric tables, per-flow and per-channel rows, the summary
              (`bufferlab.analysis.derive`: the step is the analysis of the raw result)
    persist   Derived -> the store, in one short transaction (`bufferlab.store`)
"""
