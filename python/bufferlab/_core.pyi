"""Type stub of the compiled engine binding (crates/bufferlab-py/src/lib.rs).

Specs and results cross the boundary as JSON text: the schemas are
crates/bufferlab-core/src/spec.rs (ScenarioSpec) and src/record/result.rs (RunResult).
"""

def run(spec_json: str) -> str:
    """Simulate a resolved scenario and return its RunResult as JSON text.

    Raises ValueError("field.path: reason") for a spec the engine rejects. The GIL is released
    while simulating.
    """

def validate(spec_json: str) -> None:
    """Check a resolved scenario without running it; raises ValueError("field.path: reason"),
    e.g. "flows[2]: no route from h1 to h5"."""

def engine_version() -> str:
    """The engine's version; part of every run's identity in the result store."""


def tcp_defaults() -> str:
    """The engine's TCP defaults (TcpSpec::default()) as JSON text."""
