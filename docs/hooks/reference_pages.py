"""The reference pages of the documentation, written from the code at build time.

Each page is a function returning its Markdown text: `scenario_page` from the spec's pydantic
models (bufferlab.spec, bufferlab.queues), `metrics_page` from the engine's metric catalogue,
`store_page` from the store's tables, `cli_page` from the click application (through
mkdocs-click's directive). The mkdocs hook (`reference.py`) adds them to the site; the docs tests
(tests/codebase/test_docs_reference.py) call the same functions and check the pages against the
code, so that the reference cannot drift from it.

A page is never committed: what it says is what the code does at the commit being built.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import io
import json
import math
import re
import textwrap
import tokenize
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PAGES", "ReferenceError", "Section", "Key", "scenario_sections", "scenario_page", "metrics_page",
           "store_page", "cli_page", "markdown_sections"]


class ReferenceError(RuntimeError):
    """The code has something the reference cannot describe (a field type it does not know): the
    build fails, and the message says what to add."""


# --- Markdown helpers -----------------------------------------------------------------------------

def cell(text: str) -> str:
    """Text fit for one cell of a Markdown table: one line, pipes escaped, and angle brackets
    outside code spans written as entities (a `<link>` in prose is not an HTML tag)."""
    parts = re.split(r"(`[^`]*`)", " ".join(str(text).split()))
    text = "".join(p if p.startswith("`") else p.replace("<", "&lt;").replace(">", "&gt;") for p in parts)
    return text.replace("|", "\\|")


def code(text: str) -> str:
    """Inline code, safe for backticks inside."""
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def prose(docstring: str | None) -> str:
    """A docstring as Markdown prose: dedented, paragraphs kept, reST's double backticks made
    single (Markdown's inline code)."""
    if not docstring:
        return ""
    text = inspect.cleandoc(docstring)
    return re.sub(r"``(.+?)``", r"`\1`", text)


def toml_value(value: Any) -> str:
    """A value as TOML writes it inline (the form a spec gives it)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise ReferenceError(f"no TOML form for the default {value!r}")


# --- the scenario's keys --------------------------------------------------------------------------

@dataclass
class Key:
    """One key of a table of the spec, as the reference lists it."""

    name: str
    type: str
    default: str
    doc: str


@dataclass
class Section:
    """One table of the spec (a model, or a table parsed by hand such as a distribution): its
    heading, where it is written, what it is, and its keys. `source` is the class the keys are
    read from (a pydantic model or a dataclass), None for a table read by a parse function."""

    title: str
    anchor: str
    where: str
    intro: str
    keys: list[Key]
    source: type | None = None
    kind: str | None = None


# The quantities a spec writes with a unit, explained once at the top of the page.
QUANTITIES = [
    ("time", '`"15ms"`, `"1.5s"`, `"250us"`, `"0s"`', "s, ms, us (µs), ns; stored in ns"),
    ("rate", '`"100Mbps"`, `"1Gbps"`, `"12.5MBps"`', "bps (bit, b/s) or Bps (B/s, bytes) with a k, M, G or T "
                                                      "prefix; stored in bit/s"),
    ("bytes", '`"1500B"`, `"1.25MB"`, `"64KiB"`, `1500`', "B, kB, MB, GB (powers of 10), KiB, MiB, GiB (of 2); "
                                                         "a plain integer is bytes"),
    ("size", '`"100p"`, `"1.25MB"`', "packets (p, pkt, packets) or bytes"),
    ("probability", '`0.01`, `"1%"`', "a number or a percentage"),
    ("ratio", '`1.2`, `"120%"`', "a number or a percentage"),
]


def _type_texts() -> dict[str, str]:
    """The type of each named field type of the spec (the module-level aliases of bufferlab.spec
    and bufferlab.queues), as the reference writes it. A new alias must be added here: the page
    fails to build until it is (`ReferenceError`)."""
    from bufferlab.spec.fields import KNOWN_CONTROLLERS, KNOWN_RECOVERIES

    controllers = ", ".join(f'`"{c}"`' for c in KNOWN_CONTROLLERS)
    recoveries = ", ".join(f'`"{r}"`' for r in KNOWN_RECOVERIES)
    return {
        "Rate": "[rate](#quantities)",
        "OptionalRate": '[rate](#quantities) or `"unlimited"` (no serialisation time)',
        "Time": "[time](#quantities)",
        "PositiveTime": "[time](#quantities), above 0",
        "SampleInterval": '[time](#quantities) above 0, or `"off"` (no time series)',
        "ByteCount": "[bytes](#quantities)",
        "Probability": "[probability](#quantities)",
        "Ratio": "[ratio](#quantities)",
        "PositiveCount": "integer, above 0",
        "Count": "integer",
        "Switch": "true or false",
        "Name": "text, not empty",
        "OptionalName": "text, not empty",
        "TrafficField": '`"greedy"`, or a [traffic](#traffic) table',
        "LossModelField": "a [loss model](#loss-model) table",
        "Controller": f"controller: {controllers} (any case; ns-3's names such as `\"TcpNewReno\"` too)",
        "Recovery": f"loss recovery: {recoveries} (ns-3's `\"TcpPrrRecovery\"`, `\"TcpClassicRecovery\"` too)",
        "QueueField": "a [queue](#queues): a [size](#quantities), a time at the link's rate (`\"25ms\"`), "
                      "a [size by rule](#size-by-rule), or a table with a `kind`",
        "FlowCount": "integer",
        "Seed": "integer",
        "Frequency": "number (per second)",
        "SizeDist": "a [distribution](#distributions) of [bytes](#quantities)",
        "TimeDist": "a [distribution](#distributions) of [times](#quantities)",
        "RttField": "[time](#quantities) above 0, or a [distribution](#distributions) of times "
                    "(`mixture` allowed)",
        "StartField": "[time](#quantities), or a [distribution](#distributions) of times",
        "TopologyField": "a [topology](#topology) table with a `kind`",
        "QueueSizeField": "[size](#quantities), a time at the link's rate (`\"25ms\"`) or a "
                          "[size by rule](#size-by-rule)",
        "_Bytes": "[bytes](#quantities)",
        "_Time": "[time](#quantities)",
        "_Threshold": "[size](#quantities)",
    }


# Where the spec's models and named field types live.
SPEC_MODULES = ("bufferlab.spec.scenario", "bufferlab.spec.fields", "bufferlab.spec.topology",
                "bufferlab.spec.generators", "bufferlab.spec.recording", "bufferlab.spec.quic", "bufferlab.queues")


def _aliases() -> dict[int, str]:
    """The named field types of the spec: id of a type's `Prebuilt` metadata -> the type's name."""
    from bufferlab.spec.parsed import Prebuilt

    names: dict[int, str] = {}
    for module_name in SPEC_MODULES:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if typing.get_origin(value) is typing.Annotated:
                for meta in value.__metadata__:
                    if isinstance(meta, Prebuilt):
                        names.setdefault(id(meta), name)
    return names


def _writers() -> dict[Callable[..., Any], str]:
    """A field type written inline (not a named alias) by what writes its value back."""
    from bufferlab import units

    return {units.format_rate: "Rate", units.format_time: "Time", units.format_bytes: "ByteCount",
            units.format_size: "_Threshold"}


def _bounds(schema: dict[str, Any]) -> list[str]:
    """The bounds a core schema (or its nullable's inner one) puts on a number or a text."""
    if schema.get("type") == "nullable":
        schema = schema["schema"]
    words = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    out = [f"{words[k]} {_number(schema[k])}" for k in ("gt", "ge", "lt", "le") if k in schema]
    if schema.get("allow_inf_nan") is False:
        out.append("finite")
    return out


def _number(value: Any) -> str:
    if isinstance(value, int) and value >= 2**32 and math.log2(value).is_integer():
        return f"2^{int(math.log2(value))}"
    if isinstance(value, int) and value >= 10_000:
        return f"{value:,}"
    return str(value)


def _constraints(metadata: list[Any]) -> list[str]:
    """Bounds given with `Field(ge=..)` and the like (annotated_types' markers)."""
    out = []
    for meta in metadata:
        for attribute, word in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            if hasattr(meta, attribute) and type(meta).__name__.lower() == attribute:
                out.append(f"{word} {_number(getattr(meta, attribute))}")
        if getattr(meta, "allow_inf_nan", None) is False:
            out.append("finite")
    return out


@dataclass
class _Context:
    aliases: dict[int, str]
    texts: dict[str, str]
    anchors: dict[type, str]
    lazy: dict[tuple[type, str], type]
    missing_docs: list[str] = field(default_factory=list)


def _describe(annotation: Any, metadata: list[Any], ctx: _Context, owner: str) -> str:
    """A field's type as the reference writes it: its named type, or its structure (optional,
    literal values, lists, tables, nested models), with its bounds."""
    from bufferlab.spec.parsed import Prebuilt
    from pydantic import BaseModel

    for meta in metadata:
        if isinstance(meta, Prebuilt):
            name = ctx.aliases.get(id(meta))
            if name is None:
                serialization = meta.schema.get("serialization", {})
                name = _writers().get(serialization.get("function"))  # type: ignore[arg-type]
            if name is None or name not in ctx.texts:
                raise ReferenceError(f"{owner}: a field type the reference does not know ({name or meta!r}): "
                                     "add its text to _type_texts in docs/hooks/reference_pages.py")
            bounds = _bounds(meta.schema) if name not in ("Probability", "Ratio") else []
            return ctx.texts[name] + (f"; {', '.join(bounds)}" if bounds else "")
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _describe(args[0], [*annotation.__metadata__, *metadata], ctx, owner)
    if origin in (typing.Union, types.UnionType):
        parts = [a for a in args if a is not type(None)]
        texts = [_describe(a, metadata if len(parts) == 1 else [], ctx, owner) for a in parts]
        return " or ".join(dict.fromkeys(texts))
    if origin is typing.Literal:
        if len(args) == 1:
            return code(toml_value(args[0]))
        return "one of " + ", ".join(code(toml_value(a)) for a in args)
    if origin is list:
        if args and isinstance(args[0], type) and args[0] in ctx.anchors:
            return f"list of [tables](#{ctx.anchors[args[0]]})"
        return f"list of ({_describe(args[0], [], ctx, owner)})" if args else "list"
    if origin is dict:
        return f"table of {_describe(args[1], [], ctx, owner)} values" if args else "table"
    bounds = _constraints(metadata)
    suffix = f"; {', '.join(bounds)}" if bounds else ""
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "integer" + suffix
    if annotation is float:
        return "number" + suffix
    if annotation is str:
        return "text"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation in ctx.anchors:
        return f"a [table](#{ctx.anchors[annotation]})"
    if annotation is Any:
        raise ReferenceError(f"{owner}: a field of type Any the reference cannot describe")
    raise ReferenceError(f"{owner}: a field type the reference does not know ({annotation!r}): "
                         "describe it in _describe in docs/hooks/reference_pages.py")


def _class_fields_source(cls: type) -> dict[str, tuple[ast.AnnAssign, list[str]]]:
    """Each field a class itself declares: its annotation's syntax and the comment block right
    above it (the lines of `#` comments with no blank line between them and the field)."""
    source = textwrap.dedent(inspect.getsource(cls))
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
    lines = source.splitlines()
    out = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            block = []
            line = node.lineno - 1
            while line >= 1 and line in comments and lines[line - 1].lstrip().startswith("#"):
                block.insert(0, comments[line])
                line -= 1
            out[node.target.id] = (node, block)
    return out


def _comment_doc(block: list[str]) -> str:
    """A field's comment as its documentation; a comment about how the model is built (it names
    pydantic) documents the code, not the key, and is left out."""
    text = " ".join(block)
    if not text or "pydantic" in text.lower():
        return ""
    return re.sub(r",? ?\(?issue \d+\)?", "", text).strip()


def _field_sources(model: type) -> dict[str, tuple[ast.AnnAssign, list[str]]]:
    """`_class_fields_source` over the model's classes, the nearest first."""
    out: dict[str, tuple[ast.AnnAssign, list[str]]] = {}
    for cls in reversed(model.__mro__):
        if cls.__module__.startswith("bufferlab") and "__annotations__" in vars(cls):
            out.update(_class_fields_source(cls))
    return out


def _lazy_models(model: type) -> dict[str, type]:
    """Fields of `model` whose model is imported on first use (`model_on_first_use(".m:Class")`):
    field name -> the model class, read from the annotation as written."""
    out = {}
    for name, (node, _) in _field_sources(model).items():
        for call in ast.walk(node.annotation):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id == "model_on_first_use" and call.args
                    and isinstance(call.args[0], ast.Constant)):
                module, _, attribute = call.args[0].value.partition(":")
                out[name] = getattr(importlib.import_module(module, "bufferlab.spec"), attribute)
    return out


def _sentences(text: str) -> list[str]:
    return [" ".join(s.split()) for s in re.split(r"(?<=[.;])\s+(?=[A-Z`(])", text) if s.strip()]


def _mentions(name: str, model: type, sources: dict[str, tuple[ast.AnnAssign, list[str]]]) -> str:
    """For a field without a comment of its own: the first sentence of its model's docstring, or
    of another field's comment, that is about it (it begins with the key's name in backticks)."""
    pattern = re.compile(rf"^(- )?`{re.escape(name)}`[ :]")
    texts = [prose(model.__doc__)] + [_comment_doc(block) for other, (_, block) in sources.items() if other != name]
    for text in texts:
        for sentence in _sentences(text):
            if pattern.search(sentence):
                return sentence.rstrip(";") + ("" if sentence.endswith(".") else ".")
    return ""


def _default(model: type, name: str) -> str:
    from pydantic import TypeAdapter
    from pydantic_core import PydanticUndefined

    info = model.model_fields[name]  # type: ignore[attr-defined]
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    value = info.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    written = TypeAdapter(info.rebuild_annotation()).dump_python(value, mode="json")
    return code(toml_value(written))


def _model_keys(model: type, ctx: _Context) -> list[Key]:
    sources = _field_sources(model)
    lazy = _lazy_models(model)
    keys = []
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        owner = f"{model.__name__}.{name}"
        if name in lazy:
            target = lazy[name]
            many = typing.get_origin(info.annotation) is list
            anchor = ctx.anchors[target]
            type_text = f"list of [tables](#{anchor})" if many else f"a [table](#{anchor})"
        else:
            type_text = _describe(info.annotation, list(info.metadata), ctx, owner)
        doc = info.description or _comment_doc(sources.get(name, (None, []))[1])
        if not doc:
            ctx.missing_docs.append(owner)
            doc = _mentions(name, model, sources)
        keys.append(Key(name, type_text, _default(model, name), doc))
    return keys


def _dataclass_keys(cls: type, docs: dict[str, str]) -> list[Key]:
    """A table read by hand (a dataclass): each field with its type text from `docs` and the
    comment above it as its documentation."""
    comments = _class_fields_source(cls)
    keys = []
    for f in dataclasses.fields(cls):
        default = "required" if f.default is dataclasses.MISSING else code(toml_value(f.default))
        keys.append(Key(f.name, docs.get(f.name, ""), default, _comment_doc(comments.get(f.name, (None, []))[1])))
    return keys


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def spec_models() -> list[tuple[type, str, str, str | None]]:
    """The spec's models in the page's order: (class, title, where it is written, queue kind)."""
    from bufferlab import queues
    from bufferlab.spec import generators, quic, recording, scenario, topology

    listed: list[tuple[type, str, str, str | None]] = [
        (scenario.Scenario, "Top level", "the file itself", None),
        (scenario.Dumbbell, "Dumbbell", '`[topology]` with `kind = "dumbbell"`', None),
        (topology.Tree, "Tree", '`[topology]` with `kind = "tree"`', None),
        (topology.ParkingLot, "Parking lot", '`[topology]` with `kind = "parking_lot"`', None),
        (scenario.Node, "Nodes", "`[[nodes]]` (a general graph)", None),
        (scenario.Link, "Links", "`[[links]]` (a general graph)", None),
        (scenario.FlowDefaults, "Flow defaults", "`[flow_defaults]`", None),
        (scenario.Flow, "Flows", "`[[flows]]`", None),
        (scenario.TcpOptions, "TCP options", "`tcp` of a flow, of `[flow_defaults]` or of a generator", None),
        (quic.QuicOptions, "QUIC options", '`quic` of a flow or of `[flow_defaults]` (with `transport = "quic"`)',
         None),
        (generators.Generator, "Generators", "`[[generators]]`", None),
        (recording.Record, "Recording", "`[record]`", None),
        (recording.Capture, "Captures", "`[[captures]]` or `captures` of `[record]`", None),
    ]
    for kind in queues.QUEUE_KINDS:
        model = next(m for m in typing.get_args(queues.Queue)
                     if typing.get_args(m.model_fields["kind"].annotation) == (kind,))
        listed.append((model, f"Queue: {kind}", f'a queue table with `kind = "{kind}"`', kind))
    return listed


def _distribution_keys() -> dict[str, list[str]]:
    """Each distribution's keys, as the parser knows them (it names them when it refuses one)."""
    from bufferlab.errors import SpecError
    from bufferlab.spec import distributions

    out = {}
    for kind in distributions._KNOWN:
        try:
            distributions.parse_distribution({"dist": kind, "?": 0}, "time", allow_mixture=True)
        except SpecError as e:
            known = re.search(r"\(known: (.*)\)", e.reason)
            if known is None:
                raise ReferenceError(f"distribution {kind}: the parser did not name its keys ({e})") from None
            out[kind] = ["dist", *known.group(1).split(", ")]
        else:  # pragma: no cover - an unknown key is always refused
            raise ReferenceError(f"distribution {kind}: an unknown key was accepted")
    return out


def _distribution_docs() -> dict[str, str]:
    """Each distribution's parameters as the distributions module's docstring describes them."""
    from bufferlab.spec import distributions

    docs: dict[str, str] = {}
    current = None
    for line in (distributions.__doc__ or "").splitlines():
        if line.startswith("=") or not line.strip():
            continue
        head = line[:19].strip()
        if head and not line.startswith(" ") and head in distributions._KNOWN:
            current = head
            docs[current] = line[19:].strip()
        elif current is not None and line.startswith(" " * 19):
            docs[current] += " " + line.strip()
    return {k: re.sub(r"``(.+?)``", r"`\1`", v) for k, v in docs.items()}


def scenario_sections() -> tuple[list[Section], list[str]]:
    """The page's sections, and the model fields that have no documentation of their own."""
    from bufferlab import queues
    from bufferlab.spec import fields

    models = spec_models()
    anchors = {model: _slug(title) for model, title, _, _ in models}
    ctx = _Context(_aliases(), _type_texts(), anchors, {})
    sections = []
    for model, title, where, kind in models:
        sections.append(Section(title, anchors[model], where, prose(model.__doc__), _model_keys(model, ctx),
                                source=model, kind=kind))

    traffic_kinds = fields._TRAFFIC_KEYS
    traffic_docs = {key: ", ".join(f"`{k}`" for k, allowed in traffic_kinds.items() if key in allowed)
                    for key in {k for allowed in traffic_kinds.values() for k in allowed}}
    traffic_keys = [Key(k.name, {"kind": "one of " + ", ".join(f'`"{t}"`' for t in traffic_kinds),
                                 "bytes": "[bytes](#quantities)", "rate": "[rate](#quantities)",
                                 "packet": "[bytes](#quantities)",
                                 "on": "a [distribution](#distributions) of times",
                                 "off": "a [distribution](#distributions) of times"}[k.name],
                        f'`"{fields.DEFAULT_DATAGRAM}B"`' if k.name == "packet" else
                        ("required" if k.name == "kind" else "—"),
                        f"{k.doc} Kinds: {traffic_docs[k.name]}.") for k in _dataclass_keys(fields.Traffic, {})]
    sections.append(Section("Traffic", "traffic", '`traffic` of a flow, of `[flow_defaults]`: `"greedy"` or a table',
                            prose(fields.Traffic.__doc__), traffic_keys, source=fields.Traffic))

    loss_types = {"kind": '`"gilbert_elliott"` (or `"gilbert"`)', "p": "[probability](#quantities)",
                  "r": "[probability](#quantities)", "loss_good": "[probability](#quantities)",
                  "loss_bad": "[probability](#quantities)"}
    loss_keys = _dataclass_keys(fields.LossModel, loss_types)
    for key in loss_keys:
        key.default = "required" if key.name in ("p", "r") else key.default
    sections.append(Section("Loss model", "loss-model", "`loss_model` of a link or a topology",
                            prose(fields.LossModel.__doc__), loss_keys, source=fields.LossModel))

    rule_types = {"rule": "one of " + ", ".join(f'`"{r}"`' for r in queues.RULES),
                  "rtt": '`"mean"`, `"harmonic"`, `"max"` or a [time](#quantities)',
                  "flows": "integer, above 0 (`stanford` only)", "packet": "[bytes](#quantities)"}
    rule_keys = _dataclass_keys(queues.SizeRule, rule_types)
    for key in rule_keys:
        if key.name in ("flows", "packet"):
            key.default = "unset"
    sections.append(Section("Size by rule", "size-by-rule", "a queue's size or `limit` written as a table",
                            prose(queues.SizeRule.__doc__), rule_keys, source=queues.SizeRule))

    dist_docs = _distribution_docs()
    for kind, keys in _distribution_keys().items():
        sections.append(Section(f"Distribution: {kind}", f"distribution-{_slug(kind)}",
                                f'a distribution table with `dist = "{kind}"`', dist_docs.get(kind, ""),
                                [Key(k, f'`"{kind}"`' if k == "dist" else "", "required" if k == "dist" else "—", "")
                                 for k in keys], kind=kind))
    return sections, ctx.missing_docs


SCENARIO_INTRO = """\
# Scenario keys

Every key a scenario file may hold, table by table, with its type, its default and what it
means. This page is written from the spec's models each time the documentation is built, so it
lists exactly what `bufferlab check` accepts. How a spec is put together, with examples, is
[Scenario specs](../guides/scenarios.md).

A key left out takes its default; *unset* means that the key has no value of its own and the
engine's (or the flow defaults') applies. Any key not listed here is refused
(`error: <key>: extra inputs are not permitted`).
"""


def scenario_page() -> str:
    sections, _ = scenario_sections()
    out = [SCENARIO_INTRO, "## Quantities {#quantities}\n",
           "Quantities are written as text with a unit, and stored in a base unit.\n",
           table(["quantity", "written as", "units"], [[q, w, u] for q, w, u in QUANTITIES]), ""]
    groups = [("Topology", "topology", lambda s: s.source is not None and s.where.startswith("`[topology]`")),
              ("Queues", "queues", lambda s: s.title.startswith("Queue:")),
              ("Distributions", "distributions", lambda s: s.title.startswith("Distribution:"))]
    opened: set[str] = set()
    for section in sections:
        for title, anchor, belongs in groups:
            if belongs(section) and anchor not in opened:
                opened.add(anchor)
                out.append(f"## {title} {{#{anchor}}}\n")
                out.append(GROUP_INTROS[anchor])
        level = "###" if any(belongs(section) for _, _, belongs in groups) else "##"
        out.append(f"{level} {section.title} {{#{section.anchor}}}\n")
        out.append(f"Written as {section.where}.\n")
        if section.intro:
            out.append(section.intro + "\n")
        if section.title.startswith("Distribution:"):
            out.append("Keys: " + ", ".join(code(k.name) for k in section.keys) + "\n")
            continue
        out.append(table(["key", "type", "default", "description"],
                         [[code(k.name), k.type, k.default, k.doc] for k in section.keys]))
        out.append("")
    return "\n".join(out)


GROUP_INTROS = {
    "topology": "A `[topology]` table builds the nodes and links of a common shape; its `kind` says "
                "which. Without one, the scenario lists `[[nodes]]` and `[[links]]` itself.\n",
    "queues": "A queue is written as a size (`\"100p\"`, `\"1.25MB\"`: a drop-tail FIFO of that "
              "many packets or bytes), as a time at the link's rate (`\"25ms\"`), as a "
              "[size by rule](#size-by-rule) (`{ rule = \"bdp\" }`), or as a table whose `kind` "
              "names the discipline. Other names accepted for a kind: ns-3's (`\"FifoQueueDisc\"`, "
              "`\"RedQueueDisc\"`, ...), `\"pfifo\"`, `\"droptail\"`, `\"fqcodel\"`; `kind = \"ared\"` "
              "is RED with `adaptive = true`.\n",
    "distributions": "A distribution is a table with a `dist` key and its parameters; sizes and times "
                     "are written with units (`\"20kB\"`, `\"500ms\"`), shapes and sigmas as plain "
                     "numbers. A `mixture` (of RTTs only) gives each component its share of the "
                     "flows, in the order listed.\n",
}


# --- Markdown back into sections (for the docs tests) ----------------------------------------------

def markdown_sections(text: str) -> dict[str, list[str]]:
    """A reference page's sections as it renders them: heading anchor -> the keys listed under it
    (a table's first column, or a `Keys:` line)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        heading = re.match(r"^#{2,4} .*\{#([\w-]+)\}\s*$", line)
        if heading:
            current = heading.group(1)
            out[current] = []
            continue
        if current is None:
            continue
        row = re.match(r"^\| `([^`]+)` \|", line)
        if row:
            out[current].append(row.group(1))
        elif line.startswith("Keys: "):
            out[current] += re.findall(r"`([^`]+)`", line)
    return out


# --- metrics --------------------------------------------------------------------------------------

METRICS_INTRO = """\
# Metrics

Every run computes the same catalogue of metrics from its time series and counters, in three
tables: one row per flow, one row per link direction (channel) that carried traffic, and one row
for the network as a whole. `bufferlab run --metrics` prints them; the store keeps them in the
tables `flow_metrics`, `link_metrics` and `network_metrics` ([The store](store.md)), and
`bufferlab.load(db).metrics(...)` reads them back. The lists below are the engine's own
(`_core.metric_catalogue()`), written into this page when the documentation is built.

## How the names read

A metric's name has three parts, `<stat>_<quantity>_<layer>`, after the ccperf benchmark's
convention:

- **stat**: `mean` (the mean over the samples of the flow's active period), `max`, `cov` (the
  coefficient of variation: standard deviation over mean, of the samples), `total` (a count at
  the end of the run), `agg` (in the network table: a sum over the flows active at a sample),
  `p50`, `p95`, `p99` (a percentile of every packet's value: see below).
  A name without a stat (`loss_rate_l4`, `utilization_l1`, `flow_completion_time_l4`) is a
  figure of the whole run.
- **quantity**: what is measured (`throughput`, `cwnd`, `srtt`, `qdisc_delay`, ...).
- **layer**: `l1` the link, headers included; `l2` the queue discipline; `l3` the network (a
  packet from its sending to its arrival); `l4` the transport (TCP or QUIC); `l7` the
  application.

## Sampling

Rates, windows and delays are sampled at a fixed interval, 10 ms unless the scenario says
otherwise (`sample_interval`, or `interval` of `[record]`: [Scenario keys](scenario.md)). A flow's
`mean_*` is the mean over the samples taken while it was active; a rate is the bytes of one
interval over the interval's length. The totals, the completion time, the loss rate and the link
table come from exact end-of-run counters, not from samples. The network table takes, at each
sample, a sum or a fairness index over the flows active then, and averages them over the
samples. A metric that is undefined for a row (a flow that sent nothing) is empty (null).

## Percentiles

The `p50_`, `p95_` and `p99_` metrics are percentiles of every packet, not of samples: a link's
of the sojourn time (enqueue to start of transmission, zero for a packet that did not wait) of
each packet it sent, a datagram flow's (`cbr`, `on_off`) of each received packet's one-way delay,
from the time it was sent to its arrival; a TCP or QUIC flow has none (its delay is its bytes',
`mean_one_way_delay_l7`). The engine counts the delays in log-linear histograms (32 buckets per
power of two, each at most 1/32 of its lower bound wide) and reports the q-percentile as the
midpoint of the bucket that holds the ⌈q·n⌉-th smallest value: within 1.6 % of it, exact where
every value is the same. The buckets are stored (`delay_histograms`, [The store](store.md)),
and `bufferlab plot delay` draws them as CDFs. A percentile counts the packets from the
scenario's warm-up on (`[record] warmup`, default 0: the whole run, slow start included). Give
one to judge the steady state: with an AQM, the seconds it takes to drain slow start's overshoot
can be more than 1 % of a short run's packets, and then p99 is theirs.

Units: `Mbps` is 10^6 bit/s; `segments` counts MSS-sized segments; `-` marks a ratio or an
index without a unit.
"""

METRIC_TABLES = [("flow_metrics", "Flow metrics", "One row per flow."),
                 ("link_metrics", "Link metrics", "One row per link direction (channel) that carried traffic."),
                 ("network_metrics", "Network metrics", "One row per run: sums and fairness indices over "
                                                        "the flows, per sample, averaged over the samples.")]


def metric_catalogue() -> dict[str, list[tuple[str, str, str]]]:
    from bufferlab import _core

    return {table: [tuple(row) for row in rows] for table, rows in _core.metric_catalogue().items()}


def metrics_page() -> str:
    catalogue = metric_catalogue()
    if set(catalogue) != {t for t, _, _ in METRIC_TABLES}:
        raise ReferenceError(f"the catalogue's tables changed: {sorted(catalogue)}; update METRIC_TABLES")
    out = [METRICS_INTRO]
    for name, title, intro in METRIC_TABLES:
        out += [f"## {title} {{#{name.replace('_', '-')}}}\n", f"{intro} Stored as `{name}`.\n",
                table(["metric", "unit", "definition"], [[code(m), u, d] for m, u, d in catalogue[name]]), ""]
    return "\n".join(out)


# --- the store ------------------------------------------------------------------------------------

STORE_INTRO = """\
# The store

A run's results are kept in a DuckDB file, `results/bufferlab.duckdb` under the working
directory unless `--db PATH` (or a `db` argument in Python) names another. Any DuckDB client can
read it; `bufferlab results query "SQL"` runs a query on it and `bufferlab.load(db)` gives the
same tables as polars DataFrames. This page lists every table and column of the store, at
schema version {version}, written from the store's own definition (`bufferlab.store.tables`) when
the documentation is built.

Every table of a run's rows has its `run_id` (a run's identity: the SHA-256 of its resolved
spec, seed and engine version, in hex), so that a query joins any of them to `runs`. The
tables of many rows per run (a row per sample, captured packet or histogram bucket) are views: they read as
tables, with their `run_id`, while the rows are stored in `<table>_data` under the run's number
in this store (`runs.run`). A store of an older schema version is brought to this one when a
run is written into it; one written by a newer bufferlab is refused.

The metric columns are described in [Metrics](metrics.md); times whose name ends in `_ns` are
in nanoseconds, rates in `_bps` in bit/s, sizes in `_bytes` in bytes.
"""


def _table_docs() -> dict[str, str]:
    """Each table's one-line description, from the store's module docstring ("Tables (one row per
    ...)")."""
    from bufferlab.store import tables

    docs: dict[str, str] = {}
    current = None
    lines = iter((tables.__doc__ or "").splitlines())
    for line in lines:
        if line.startswith("Tables (one row per"):
            break
    for line in lines:
        if not line.strip():
            break
        match = re.match(r"^  (\w+)\s{2,}(.*)$", line)
        if match:
            current = match.group(1)
            docs[current] = match.group(2).strip()
        elif current is not None:
            docs[current] += " " + line.strip()
    return {k: re.sub(r"``(.+?)``", r"`\1`", v) for k, v in docs.items()}


def store_tables() -> dict[str, dict[str, str]]:
    from bufferlab.store import tables

    return {name: dict(columns) for name, columns in tables.TABLES.items()}


def store_page() -> str:
    from bufferlab.analysis import catalogue
    from bufferlab.store import schema, tables

    metrics = {**catalogue.FLOW_METRICS, **catalogue.LINK_METRICS, **catalogue.NETWORK_METRICS}
    docs = _table_docs()
    out = [STORE_INTRO.format(version=schema.SCHEMA_VERSION)]
    for name, columns in store_tables().items():
        out.append(f"## {name} {{#{name.replace('_', '-')}}}\n")
        what = docs.get(name)
        if what is None:
            raise ReferenceError(f"store table {name} is not described in store/tables.py's docstring")
        out.append(f"One row per {what}.\n")
        if name in tables.NUMBERED_TABLES:
            out.append(f"A view over `{tables.stored_table(name)}`, which keys its rows by the run's number.\n")
        keys = tables.KEYS.get(name, ())
        rows = []
        for column, kind in columns.items():
            sql_type, _, constraint = kind.partition(" ")
            notes = []
            if constraint:
                notes.append(constraint.lower())
            if column in keys:
                notes.append("a key of the run's rows")
            if column in metrics:
                unit, definition = metrics[column]
                notes.append(f"metric ({unit}): {definition}")
            if name == "channel_timeseries" and column in tables.AQM_COLUMNS:
                notes += [f"{kind}: {what}" for kind, what in tables.AQM_COLUMNS[column].items()]
                notes.append("NULL for other queues")
            rows.append([code(column), code(sql_type), "; ".join(notes)])
        out += [table(["column", "type", "notes"], rows), ""]
    return "\n".join(out)


# --- the command line ---------------------------------------------------------------------------

CLI_INTRO = """\
# Command line

Every `bufferlab` command with its arguments and options, written from the command-line
application itself when the documentation is built (`bufferlab COMMAND --help` prints the same).
Bad input of any kind exits with status 2 and one line, `error: <field>: <reason>`, on stderr;
an interruption (Ctrl-C, SIGTERM) exits with 130 or 143 and keeps every run already stored.

"""


def load_commands() -> None:
    """Import every command of the lazy group, so that the directive lists them all (it lists a
    group's commands as loaded, once any is)."""
    import click

    from bufferlab.cli.app import cli

    def walk(group: click.Group) -> None:
        ctx = click.Context(group, info_name=group.name)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                walk(command)

    walk(cli)


def cli_page() -> str:
    load_commands()
    directive = "\n".join(["::: mkdocs-click", "    :module: bufferlab.cli.app", "    :command: cli",
                           "    :prog_name: bufferlab", "    :depth: 1", "    :style: table",
                           "    :list_subcommands: true", ""])
    return CLI_INTRO + directive


# reference/<page>.md -> the function that writes it.
PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/scenario.md": scenario_page,
    "reference/metrics.md": metrics_page,
    "reference/store.md": store_page,
}
