"""tools/pgo-build falls back to the plain build, saying why in one line, wherever the
profile-guided one cannot be made: PGO=0, or no llvm-profdata of rustc's LLVM major version (a
profile written by one LLVM is not read by another). The script runs against stand-ins for
rustc, maturin and llvm-profdata, so these checks build nothing; the profile-guided path itself
is what `make setup` runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "pgo-build"


def _executable(path: Path, body: str) -> Path:
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)
    return path


@pytest.fixture
def stand_ins(tmp_path: Path) -> dict[str, Path]:
    """A venv whose maturin records its arguments, and a rustc of LLVM 99 with an empty sysroot."""
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    calls = tmp_path / "maturin_calls"
    _executable(venv_bin / "maturin", f'echo "$*" >> {calls}\n')
    _executable(venv_bin / "python", 'exit 1\n')
    tools = tmp_path / "tools"
    tools.mkdir()
    sysroot = tmp_path / "sysroot"
    sysroot.mkdir()
    _executable(tools / "rustc", f"""case "$*" in
  -vV) printf 'rustc 1.95.0\\nhost: x86_64-unknown-linux-gnu\\nLLVM version: 99.1.0\\n' ;;
  "--print sysroot") echo {sysroot} ;;
  *) exit 1 ;;
esac
""")
    return {"venv": venv_bin.parent, "calls": calls, "tools": tools}


def _run(stand_ins: dict[str, Path], **env: str) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if key not in ("PGO", "LLVM_PROFDATA")}
    environ.update(VIRTUAL_ENV=str(stand_ins["venv"]), PATH=f"{stand_ins['tools']}:/usr/bin:/bin", **env)
    return subprocess.run([str(SCRIPT)], env=environ, capture_output=True, text=True, timeout=60)


def test_pgo_off_builds_plainly_in_one_step(stand_ins: dict[str, Path]) -> None:
    done = _run(stand_ins, PGO="0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["pgo-build: plain release build: PGO=0"]
    assert stand_ins["calls"].read_text().splitlines() == ["develop --release"]


def test_without_a_profdata_of_rustc_s_llvm_major_the_build_is_plain(stand_ins: dict[str, Path]) -> None:
    # An llvm-profdata of another LLVM (the system's LLVM 14 beside rustc's) is not used.
    _executable(stand_ins["tools"] / "llvm-profdata", 'echo "  LLVM version 14.0.6"\n')
    done = _run(stand_ins)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert line.startswith("pgo-build: plain release build: no llvm-profdata of LLVM 99 (rustc's) found")
    assert stand_ins["calls"].read_text().splitlines() == ["develop --release"]


def test_a_profdata_that_fails_on_version_counts_as_no_match(stand_ins: dict[str, Path]) -> None:
    # Debian's LLVM 14 llvm-profdata exits with an error on --version: no match, not a failed build.
    failing = _executable(stand_ins["tools"] / "old-profdata", 'echo "unknown option" >&2; exit 1\n')
    done = _run(stand_ins, LLVM_PROFDATA=str(failing))
    assert done.returncode == 0, done.stderr
    assert "no llvm-profdata of LLVM 99" in done.stdout
    assert stand_ins["calls"].read_text().splitlines() == ["develop --release"]
