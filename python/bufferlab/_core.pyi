"""Type stub of the compiled engine binding (crates/bufferlab-py/src/lib.rs).

Specs cross the boundary as JSON text (crates/bufferlab-core/src/spec.rs, ScenarioSpec); results
as JSON text of the counters (src/record/result.rs, RunResult) plus the long numeric columns as
bytes (bufferlab.pipeline.result.decode joins them).
"""

def run(spec_json: str) -> tuple[str, dict[str, bytes]]:
    """Simulate a resolved scenario. Returns the RunResult counters as JSON text, whose `columns`
    describes (dtype, shape) each long column, and those columns as little-endian bytes.

    Raises ValueError("field.path: reason") for a spec the engine rejects. The GIL is released
    while simulating.
    """

def plan(spec_json: str) -> bool:
    """Check a resolved scenario completely without building the simulator; raises
    EngineSpecError("field.path: reason"), e.g. "flows[2]: no route from h1 to h5". Returns whether
    it draws random numbers (whether its seed can change anything)."""

def engine_version() -> str:
    """The engine's version; part of every run's identity in the result store."""

def package_version() -> str:
    """The package's version (the Cargo workspace's)."""


def tcp_defaults() -> str:
    """The engine's TCP defaults (TcpSpec::default()) as JSON text."""


def check_distribution(dist_json: str) -> str:
    """Why a distribution (engine JSON form) is malformed, or "" if it is fine."""


def quic_defaults() -> str:
    """The engine's QUIC defaults (QuicSpec::default()) as JSON text."""


class Run:
    """A run advanced in steps (for progress reports); the result equals `run()`'s."""

    def __init__(self, spec_json: str) -> None:
        """Validate and set up; raises ValueError("field.path: reason")."""

    @property
    def now_ns(self) -> int:
        """Simulated time reached so far, ns."""

    @property
    def end_ns(self) -> int:
        """Simulated time at which the run ends at the latest, ns."""

    def advance(self, until_ns: int) -> bool:
        """Simulate up to `until_ns` (without the GIL); returns whether the run is over."""

    def finish(self) -> tuple[str, dict[str, bytes]]:
        """The result as `run()` returns it; raises ValueError unless the run is over."""
