"""A click group that imports a command's module only when that command is asked for."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

__all__ = ["LazyGroup"]


class LazyGroup(click.Group):
    """A command group whose commands are imported when one is first asked for (by name, or all
    of them for ``--help``): `run` does not pay for the modules of `size`, `advise`, `sweep`,
    `plot`, `report` and `reproduce`, nor for declaring `ccperf`'s and `results`' options.
    `lazy` maps each such command's name to ``"module:attribute"`` (relative to `bufferlab.cli`)."""

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = self.lazy.pop(cmd_name, None)
        if where is not None:
            module, _, attribute = where.partition(":")
            self.add_command(getattr(importlib.import_module(module, __package__), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)
