"""The wheel installs and runs without a Rust toolchain: `make wheel` builds it (after setup, reusing
setup's compiled crates), a fresh virtualenv installs it from binary wheels only, with the
dependencies pinned by requirements.lock and no cargo or rustc on its PATH, and the quickstart
runs there: `bufferlab run scenarios/dumbbell.toml` into a fresh store, then `bufferlab.load`
reads the run back, the package and its engine imported from the virtualenv, not this checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Minutes (a wheel, then a fresh virtualenv): `make test-slow` runs it, `make test` does not.
pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.very_slow]

# What a user's shell has, less any Rust toolchain: the system's directories only.
SYSTEM_PATH = os.pathsep.join(d for d in ("/usr/local/bin", "/usr/bin", "/bin") if Path(d).is_dir())


def run(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{args[0]} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def user_env(venv: Path) -> dict[str, str]:
    """The environment of a user who activated `venv`: nothing that points at this checkout (its
    python/ directory, its virtualenv, the build's variables) and no Rust toolchain on PATH."""
    dropped = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYO3_PYTHON", "CARGO_TARGET_DIR", "RUSTC_WORKSPACE_WRAPPER",
               "MAKEFLAGS", "MAKELEVEL", "MFLAGS"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), SYSTEM_PATH])
    env["VIRTUAL_ENV"] = str(venv)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make wheel` into a directory of its own (not dist/, which may hold an older build)."""
    out = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    run(["make", "--no-print-directory", "wheel", f"WHEEL_DIR={out}"], cwd=REPO, env=env, timeout=1800)
    wheels = list(out.glob("bufferlab-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {out}, found {[w.name for w in wheels]}"
    return wheels[0]


def test_the_wheel_is_one_abi3_wheel_for_cpython_311_and_later_with_the_engine_inside(wheel: Path) -> None:
    # name-version-python-abi-platform.whl (PEP 427): cp311-abi3 is the stable ABI of CPython >= 3.11.
    _, _, python_tag, abi_tag, platform_tag = wheel.stem.split("-")
    assert (python_tag, abi_tag) == ("cp311", "abi3")
    if sys.platform == "linux":
        assert platform_tag.startswith("manylinux"), platform_tag
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    engines = [n for n in names if n.startswith("bufferlab/_core")]
    assert sorted(engines) == ["bufferlab/_core.abi3.so", "bufferlab/_core.pyi"], engines
    assert "bufferlab/py.typed" in names
    assert any(n.endswith(".dist-info/entry_points.txt") for n in names)


def test_a_fresh_virtualenv_installs_the_wheel_without_rust_and_runs_the_quickstart(wheel: Path,
                                                                                      tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # (From a virtualenv's interpreter, venv makes one of the CPython that interpreter came from.)
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=user_env(venv), timeout=120)
    env = user_env(venv)
    for tool in ("cargo", "rustc", "maturin"):
        assert shutil.which(tool, path=env["PATH"]) is None, f"{tool} is on the user's PATH"

    # Binary wheels only (a source distribution would mean compiling), the dependencies at the
    # versions requirements.lock pins; no bytecode compiled ahead (it only costs the test time).
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-compile", "--only-binary=:all:", "--constraint", str(REPO / "requirements.lock"), str(wheel)],
        cwd=tmp_path, env=env, timeout=900)

    work = tmp_path / "work"
    (work / "scenarios").mkdir(parents=True)
    shutil.copy(REPO / "scenarios" / "dumbbell.toml", work / "scenarios")
    summary = run(["bufferlab", "run", "scenarios/dumbbell.toml"], cwd=work, env=env, timeout=300).stdout
    first = summary.splitlines()[0]
    assert first.startswith("dumbbell: 30 s simulated, seed 1, engine "), summary
    assert "simulated and stored (results/bufferlab.duckdb, run " in first, summary
    assert "btl_forward" in summary and "flow_9" in summary, summary
    assert (work / "results" / "bufferlab.duckdb").is_file()

    check = ("import json, bufferlab, bufferlab._core as core\n"
             "res = bufferlab.load('results/bufferlab.duckdb')\n"
             "runs = res.runs\n"
             "print(json.dumps({'package': bufferlab.__file__, 'engine': core.__file__, 'runs': runs.height,\n"
             "                  'status': runs['status'][0], 'flows': res.flows.height,\n"
             "                  'goodput_bps': res.flows['goodput_bps'].sum()}))\n")
    loaded = json.loads(run([str(venv / "bin" / "python"), "-c", check], cwd=work, env=env, timeout=120).stdout)
    site = Path(venv / "lib")
    assert Path(loaded["package"]).is_relative_to(site) and Path(loaded["engine"]).is_relative_to(site), loaded
    assert loaded["runs"] == 1 and loaded["status"] == "complete" and loaded["flows"] == 10, loaded
    # Ten greedy flows share the 100 Mb/s bottleneck: together they get most of it.
    assert 80e6 < loaded["goodput_bps"] < 100e6, loaded
