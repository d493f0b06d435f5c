"""The reference pages of the documentation list exactly what the code has: every key of every
table of a scenario, every metric of the catalogue, every table and column of the store, every
command and option of the command line, and nothing else. The pages are written by the same
functions the documentation's build calls (docs/hooks/reference_pages.py), so a key added to a
model, a metric added to the engine or a column added to the store shows in the reference, and
one the reference lists cannot outlive the code."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[2]
HOOKS = REPO / "docs" / "hooks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


pages = _load("reference_pages")


@pytest.fixture(scope="module")
def scenario() -> tuple[dict[str, list[str]], list[Any]]:
    sections, _ = pages.scenario_sections()
    return pages.markdown_sections(pages.scenario_page()), sections


def spec_models() -> list[type[BaseModel]]:
    """Every public model the spec's modules define (not a private base such as `_Model`)."""
    found = []
    for module_name in pages.SPEC_MODULES:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseModel) and value.__module__ == module_name
                    and not name.startswith("_")):
                found.append(value)
    return found


def test_every_model_of_the_spec_has_a_section_listing_exactly_its_keys(scenario):
    rendered, sections = scenario
    by_model = {s.source: s for s in sections if s.source is not None}
    models = spec_models()
    assert {m.__name__ for m in models} >= {"Scenario", "Dumbbell", "Tree", "ParkingLot", "Flow", "TcpOptions",
                                            "QuicOptions", "Generator", "Record", "Capture", "RedQueue"}
    for model in models:
        assert model in by_model, f"{model.__name__} has no section on the scenario reference"
        section = by_model[model]
        assert rendered[section.anchor] == list(model.model_fields), model.__name__


def test_every_section_of_the_scenario_page_is_a_table_of_the_spec(scenario):
    rendered, sections = scenario
    models = set(spec_models())
    from bufferlab import queues
    from bufferlab.spec import distributions, fields

    tables_by_hand = {fields.Traffic, fields.LossModel, queues.SizeRule}
    for section in sections:
        assert section.anchor in rendered
        if section.source is None:
            assert section.title.startswith("Distribution:") and section.kind in distributions._KNOWN
        else:
            assert section.source in models | tables_by_hand, section.title
    # Headings of the page that are not sections hold no keys (the quantities, the groups).
    listed = {s.anchor for s in sections}
    assert all(not keys for anchor, keys in rendered.items() if anchor not in listed)


def test_each_queue_kind_is_a_section_of_its_own(scenario):
    from bufferlab import queues

    _, sections = scenario
    kinds = [s.kind for s in sections if s.title.startswith("Queue:")]
    assert kinds == list(queues.QUEUE_KINDS)


def test_tables_read_by_hand_list_the_keys_their_parsers_take(scenario):
    from bufferlab import queues
    from bufferlab.spec import fields

    rendered, _ = scenario
    assert rendered["traffic"] == [f.name for f in dataclasses.fields(fields.Traffic)]
    assert set(rendered["traffic"]) == set().union(*fields._TRAFFIC_KEYS.values())
    assert rendered["loss-model"] == [f.name for f in dataclasses.fields(fields.LossModel)]
    assert rendered["size-by-rule"] == [f.name for f in dataclasses.fields(queues.SizeRule)]


def test_each_distribution_lists_the_keys_its_parser_accepts_and_no_other(scenario):
    from bufferlab.errors import SpecError
    from bufferlab.spec import distributions

    rendered, _ = scenario
    for kind in distributions._KNOWN:
        keys = rendered[f"distribution-{kind.replace('_', '-')}"]
        assert keys[0] == "dist"
        for key in keys[1:]:
            try:
                distributions.parse_distribution({"dist": kind, key: "1s"}, "time", allow_mixture=True)
            except SpecError as e:
                assert "unknown key" not in e.reason, (kind, key, e)
        with pytest.raises(SpecError, match="unknown key"):
            distributions.parse_distribution({"dist": kind, "nonsense": 1}, "time", allow_mixture=True)


def test_every_key_of_the_scenario_reference_has_a_documentation_of_its_own(scenario):
    # A model field documents itself (a comment right above it, or its description); one that
    # does not is listed, whatever sentence of its model the page may borrow for it.
    _, missing = pages.scenario_sections()
    assert missing == [], f"keys without a comment of their own: {', '.join(missing)}"
    _, sections = scenario
    # Every table the page draws, the ones read by hand included, says what each key means.
    # (Distributions list their keys on one line, described by the section's text.)
    undocumented = [f"{section.title}: {key.name}" for section in sections
                    if not section.title.startswith("Distribution:")
                    for key in section.keys if not key.doc.strip()]
    assert undocumented == []


def test_a_field_of_a_type_the_reference_does_not_know_fails_the_build():
    from bufferlab.spec.parsed import Parsed

    class Odd(BaseModel):
        value: Annotated[int, Parsed(int, str)]

    ctx = pages._Context(pages._aliases(), pages._type_texts(), {}, {})
    with pytest.raises(pages.ReferenceError, match="Odd.value"):
        pages._model_keys(Odd, ctx)


def test_defaults_are_written_as_a_spec_writes_them(scenario):
    _, sections = scenario
    top = next(s for s in sections if s.title == "Top level")
    defaults = {k.name: k.default for k in top.keys}
    assert defaults["sample_interval"] == '`"10ms"`'
    assert defaults["duration"] == "required"
    splitbuff = next(s for s in sections if s.kind == "splitbuff")
    assert {k.name: k.default for k in splitbuff.keys}["limit"] == '`{ rule = "bdp", rtt = "mean" }`'


def test_the_metrics_page_lists_the_engines_catalogue():
    from bufferlab.analysis import catalogue

    rendered = pages.markdown_sections(pages.metrics_page())
    assert rendered["flow-metrics"] == list(catalogue.FLOW_METRICS)
    assert rendered["link-metrics"] == list(catalogue.LINK_METRICS)
    assert rendered["network-metrics"] == list(catalogue.NETWORK_METRICS)
    text = pages.metrics_page()
    for name, (unit, definition) in {**catalogue.FLOW_METRICS, **catalogue.LINK_METRICS,
                                      **catalogue.NETWORK_METRICS}.items():
        assert f"| `{name}` | {pages.cell(unit)} | {pages.cell(definition)} |" in text


def test_the_store_page_lists_every_table_and_column_with_its_type():
    from bufferlab.store import schema, tables

    text = pages.store_page()
    rendered = pages.markdown_sections(text)
    assert list(rendered) == [t.replace("_", "-") for t in tables.TABLES]
    for table, columns in tables.TABLES.items():
        assert rendered[table.replace("_", "-")] == list(columns), table
        for column, kind in columns.items():
            assert f"| `{column}` | `{kind.split()[0]}` |" in text, (table, column)
    assert f"schema version {schema.SCHEMA_VERSION}" in text


def _commands() -> list[tuple[str, Any]]:
    """Every command of the application, by its full name, and the command."""
    import click

    from bufferlab.cli.app import cli

    pages.load_commands()
    out = []

    def walk(group: click.Group, prefix: str) -> None:
        ctx = click.Context(group, info_name=group.name)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            out.append((f"{prefix} {name}", command))
            if isinstance(command, click.Group):
                walk(command, f"{prefix} {name}")

    walk(cli, "bufferlab")
    return out


def test_the_command_line_page_documents_every_command_and_option():
    import markdown

    html = markdown.Markdown(extensions=["mkdocs-click", "attr_list", "tables", "toc"]).convert(pages.cli_page())
    commands = _commands()
    assert {"bufferlab run", "bufferlab results query", "bufferlab plot"} <= {name for name, _ in commands}
    for name, command in commands:
        # Its heading, and its usage line under its full name.
        assert re.search(rf"<h\d[^>]*>{name.split()[-1]}</h\d>", html), name
        assert f"{name} [OPTIONS]" in html, name
        for param in command.params:
            for opt in [*param.opts, *getattr(param, "secondary_opts", [])]:
                if opt.startswith("-"):
                    assert f"<code>{opt}</code>" in html, (name, opt)
