"""The command's cache of the code dataclasses, typing and re compile at run time (`bufferlab.codecache`):
what it makes is what the built-ins make, it is kept between processes only where bytecode is
written, and a file that is not its own is ignored. Each case runs in a fresh interpreter, as the
cache replaces names in the standard library's modules for the whole process."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bufferlab import codecache

ROOT = Path(__file__).resolve().parent.parent

# Dataclasses and forward references of every kind the cache serves, described by what they do.
PROBE = """
import collections, dataclasses, json, sys, typing
from bufferlab import codecache
if sys.argv[2] == "cached":
    codecache.install(__import__("pathlib").Path(sys.argv[1]))

@dataclasses.dataclass(frozen=True, order=True)
class Point:
    x: int
    y: "tuple[int, ...]" = ()

@dataclasses.dataclass
class Other:
    x: int
    y: "list[int]" = dataclasses.field(default_factory=list)

Pair = collections.namedtuple("Pair", ["left", "right"], defaults=[0])
p, q = Point(1), Point(1, (2,))
try:
    p.x = 3
    frozen = "assignable"
except dataclasses.FrozenInstanceError as e:
    frozen = type(e).__name__
ref = typing.ForwardRef("dict[str, Point]")
try:
    typing.ForwardRef("not an expression(")
    bad = "accepted"
except SyntaxError as e:
    bad = str(e)
cache = codecache._cache
print(json.dumps({
    "repr": [repr(p), repr(q), repr(Other(2))], "eq": [p == Point(1), p == q, p < q], "hash": hash(p) == hash(Point(1)),
    "frozen": frozen, "init": str(__import__("inspect").signature(Point)),
    "ref": repr(ref._evaluate(globals(), None, frozenset())), "bad": bad,
    "pair": [repr(Pair(1)), repr(Pair(1, 2)), str(__import__("inspect").signature(Pair))],
    "code": [f.__code__.co_code.hex() for f in (Point.__init__, Point.__repr__, Point.__eq__, Other.__init__,
                                                Pair.__new__)],
    "new": cache.new if cache else None, "read": len(cache.codes or {}) if cache else None}))
"""


# Regular expressions of every kind the cache serves or leaves to `re`: text and bytes, flags
# given and written inline, named and numbered groups, verbose text, one that the parser warns
# about (each time) and one that does not parse. Each pattern object is described by what the
# matcher is made from (patterns compare equal when their flags, text and program are).
REGEX_PROBE = """
import json, re, sys, warnings
from bufferlab import codecache
patterns = [("(?P<rate>[0-9.]+)\\s*(?P<unit>[kMG]?bps)", 0), (b"^(\\d+)-(\\d+)$", 0), ("(?i)ab+c|d", re.M),
            ("\\n  (?P<a>x)  # comment\\n  | y", re.X), ("[a-z]+", re.I | re.S), ("(a)(b)?(?P<c>c)", 0)]
if sys.argv[2] == "cached":
    codecache.install(__import__("pathlib").Path(sys.argv[1]))
compiled = [re.compile(p, f) for p, f in patterns]
plain = [codecache._real_regex_compile(p, f) for p, f in patterns]
with warnings.catch_warnings(record=True) as warned:
    warnings.simplefilter("always")
    re.compile("[[a]b")
try:
    re.compile("(unclosed")
    bad = "accepted"
except re.error as e:
    bad = str(e)
cache = codecache._cache
print(json.dumps({
    "equal": [c == q for c, q in zip(compiled, plain)],
    "described": [[c.pattern if isinstance(c.pattern, str) else c.pattern.decode(), c.flags, c.groups,
                   dict(c.groupindex)] for c in compiled],
    "matches": [bool(compiled[0].match("80 Mbps")), compiled[1].match(b"12-34").groups() == (b"12", b"34")],
    "warned": [str(w.message) for w in warned], "bad": bad,
    "new": cache.new if cache else None}))
"""


def bytecode_written() -> dict[str, str]:
    """The environment of a process that writes its bytecode (and so the code cache)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_forking_with_cache(file: Path, program: str) -> None:
    """Run `program` in a process that writes its bytecode, after it has imported dataclasses and os
    and installed the code cache kept in `file`."""
    code = ("import dataclasses, os, sys\nfrom pathlib import Path\nfrom bufferlab import codecache\n"
            f"codecache.install(Path({str(file)!r}))\n" + program)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=bytecode_written())


def probe(file: Path, mode: str, write: bool = True, program: str = PROBE) -> dict[str, object]:
    env = bytecode_written()
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = subprocess.run([sys.executable, "-c", program, str(file), mode], capture_output=True, text=True, check=True,
                         cwd=ROOT, env=env)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_cached_code_makes_the_same_classes_and_references_as_the_built_ins(tmp_path: Path) -> None:
    file = tmp_path / "codes.marshal"
    plain = probe(file, "plain")
    first = probe(file, "cached")
    second = probe(file, "cached")
    behaviour = ("repr", "eq", "hash", "frozen", "init", "ref", "bad", "pair", "code")
    assert {k: first[k] for k in behaviour} == {k: plain[k] for k in behaviour}
    assert {k: second[k] for k in behaviour} == {k: plain[k] for k in behaviour}
    assert plain["bad"] != "accepted"  # a text that does not compile still raises, and is not kept
    # The first process compiled each text once and kept it; the second read them all and
    # compiled nothing.
    assert isinstance(first["new"], int) and first["new"] > 0 and first["read"] == first["new"]
    assert second["new"] == 0 and second["read"] == first["new"]


@pytest.mark.skipif(not codecache.REGEX_STEPS_KNOWN, reason="re's private steps are known for Python 3.11-3.13 only")
def test_cached_regular_expressions_are_the_patterns_re_makes(tmp_path: Path) -> None:
    file = tmp_path / "codes.marshal"
    plain, first, second = (probe(file, mode, program=REGEX_PROBE) for mode in ("plain", "cached", "cached"))
    for run in (plain, first, second):
        assert run["equal"] == [True] * 6 and run["matches"] == [True, True]
        assert {k: run[k] for k in ("described", "warned", "bad")} == {k: plain[k] for k in ("described", "warned",
                                                                                             "bad")}
    # The parser's warning is given in every process, and a pattern that does not parse still raises.
    assert plain["warned"] == ["Possible nested set at position 1"] and plain["bad"] != "accepted"
    # The second process read the first one's patterns and parsed none of them again.
    assert isinstance(first["new"], int) and first["new"] >= 6 and second["new"] == 0


def test_nothing_is_written_where_bytecode_is_not(tmp_path: Path) -> None:
    file = tmp_path / "codes.marshal"
    assert probe(file, "cached", write=False)["new"] != 0
    assert not file.exists()


def test_a_file_not_written_by_the_cache_counts_as_none_and_is_replaced(tmp_path: Path) -> None:
    file = tmp_path / "codes.marshal"
    for foreign in (b"", b"not marshalled", b"bufferlab code cache cpython-20 0 4\n" + b"\0" * 8):
        file.write_bytes(foreign)
        first = probe(file, "cached")
        assert isinstance(first["new"], int) and first["new"] > 0 and first["read"] == first["new"]
        assert file.read_bytes() != foreign
        assert probe(file, "cached")["new"] == 0  # the file the first one wrote in its place
    # A file of ours whose entries are not code: each is made again.
    data = file.read_bytes()
    header, texts = data[:data.index(b"\n") + 1], marshal.loads(data[data.index(b"\n") + 1:])
    file.write_bytes(header + marshal.dumps(dict.fromkeys(texts, 0)))
    again = probe(file, "cached")
    assert again["new"] == len(texts) and again["repr"] == probe(file, "plain")["repr"]


def test_a_forked_child_leaves_the_file_to_its_parent(tmp_path: Path) -> None:
    # The store's writer process is forked from the command after the cache is installed.
    file = tmp_path / "codes.marshal"
    run_forking_with_cache(file, "if os.fork() == 0:\n"
                                 "    dataclasses.make_dataclass('C', ['a'])\n"
                                 "    sys.exit(0)\n"
                                 "os.wait()\n")
    assert not file.exists()


def test_a_forked_child_saves_its_texts_beside_its_parent_s(tmp_path: Path) -> None:
    # The store's writer process saves what DuckDB's import compiled (`codecache.save`), and the
    # command's process adds its own texts to what the file holds when it exits.
    file = tmp_path / "codes.marshal"
    run_forking_with_cache(file, "if os.fork() == 0:\n"
                                 "    dataclasses.make_dataclass('Child', ['in_the_child'])\n"
                                 "    codecache.save()\n"
                                 "    os._exit(0)\n"
                                 "os.wait()\n"
                                 "dataclasses.make_dataclass('Parent', ['in_the_parent'])\n")
    data = file.read_bytes()
    texts = marshal.loads(data[data.index(b"\n") + 1:])
    assert any("in_the_child" in text for text in texts) and any("in_the_parent" in text for text in texts)
    assert list(tmp_path.iterdir()) == [file]  # no temporary file left


def test_only_the_command_s_process_installs_the_cache() -> None:
    code = ("import collections, dataclasses, re, typing\nimport bufferlab.cli, bufferlab.spec.scenario\n"
            "original = re._compiler.compile\n"
            "replaced = lambda: [hasattr(dataclasses, 'exec'), hasattr(typing, 'compile'), hasattr(collections, 'eval'),\n"
            "                    re._compiler.compile is not original]\n"
            "library = replaced()\n"
            "bufferlab.cli.prepare_process()\n"
            "print(library, replaced())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[False, False, False, False] [True, True, True, True]"
