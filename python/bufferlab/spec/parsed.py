"""`Parsed`: the pydantic field type of a value the spec writes as text (or a table), checked and
converted by one plain function and written back by another.

    Rate = Annotated[int, Parsed(parse_rate, format_rate, returns=STR)]

It builds the same core schema as ``Annotated[int, PlainValidator(parse_rate),
PlainSerializer(format_rate, return_type=str)]``, but once, where the type is defined, instead of
at every field that uses it. Pydantic's pair asks for the schema of the annotated type itself (a
union of queue models, a dataclass of distributions) only to drop it for the serializer, and
inspects both functions' signatures, at each of the ~80 fields of the spec's models, which makes
building the models dearer by more than half.

`Prebuilt` is the same for a type pydantic knows, with its constraints:

    PositiveCount = Annotated[int | None, Prebuilt(nullable_schema(int_schema(strict=True, gt=0)))]

validates as ``StrictInt | None = Field(default=None, gt=0)`` does (the same core schema, so the
same errors), but pydantic builds the union and applies the constraint once, not at each field
that uses it, a third of such a field's cost.

`model_on_first_use` is a nested model (or a list of them) whose class is imported, and so built,
when a spec first has one, with the errors and dumps of a plain nested model:

    generators: Annotated[list[Generator], model_on_first_use(".generators:Generator", many=True)] = []
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from pydantic_core import CoreSchema, ValidationError, core_schema

from ..errors import from_validation_error

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel, GetCoreSchemaHandler

__all__ = ["Prebuilt", "Parsed", "model_on_first_use", "STR", "ANY", "TABLE", "TEXT_OR_TABLE"]

# Schemas of what a serializer returns (`PlainSerializer`'s `return_type`, or its function's
# return annotation).
STR = core_schema.str_schema()
ANY = core_schema.any_schema()
TABLE = core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
TEXT_OR_TABLE = core_schema.union_schema([STR, TABLE])


def _as_is(value: Any, serialize: core_schema.SerializerFunctionWrapHandler) -> Any:
    return serialize(value)


class Prebuilt:
    """Annotated metadata: a field whose core schema is `schema`, built where the type is defined
    (pydantic sets a field's default around it)."""

    __slots__ = ("schema",)

    def __init__(self, schema: CoreSchema) -> None:
        self.schema = schema

    def __get_pydantic_core_schema__(self, source_type: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        # A copy: pydantic may set keys of a field's schema (a default, a serializer of its own).
        return cast("CoreSchema", dict(self.schema))


class Parsed(Prebuilt):
    """Annotated metadata: a field validated by `parse` (a plain validator: nothing runs before
    it; it raises ValueError, SpecError included, on bad input; with `info`, it takes pydantic's
    ValidationInfo too) and serialized by `write` into `returns`. Without `write` the value is
    serialized as the plain type `inner` (a schema: float, str)."""

    __slots__ = ()

    def __init__(self, parse: Callable[..., Any], write: Callable[[Any], Any] | None = None, *,
                 returns: CoreSchema | None = None, inner: CoreSchema | None = None, info: bool = False) -> None:
        serialization: core_schema.SerSchema | None
        if write is not None:
            serialization = core_schema.plain_serializer_function_ser_schema(write, info_arg=False,
                                                                              return_schema=returns)
        elif inner is not None:
            serialization = core_schema.wrap_serializer_function_ser_schema(_as_is, schema=inner, return_schema=inner)
        else:
            serialization = None
        if info:
            super().__init__(core_schema.with_info_plain_validator_function(
                parse, serialization=serialization, json_schema_input_schema=ANY))
        else:
            super().__init__(core_schema.no_info_plain_validator_function(
                parse, serialization=serialization, json_schema_input_schema=ANY))


def model_on_first_use(where: str, *, many: bool = False) -> Prebuilt:
    """Annotated metadata: a field whose value is a model (or, `many`, a list of models) of the
    class `where` (``"module:Class"``, the module relative to this package), imported and so
    built when the field is first given a value, as a scenario's `[topology]` builds a tree's
    model (`scenario._topology`). Its errors are pydantic's, named as pydantic names them
    (``generators[1].kind``: `errors.from_validation_error` with the item's index); the value is
    serialized as the model serializes itself (pydantic's inference for an `ANY` item, which
    passes ``mode`` and ``exclude_unset`` on). For the parts of a spec a plain run never has
    (generators, recording, QUIC), whose model classes a run that needs none of them does not
    build."""
    module, _, name = where.partition(":")

    def model() -> type[BaseModel]:
        built: type[BaseModel] = getattr(importlib.import_module(module, __package__), name)
        return built

    def one(value: Any, info: core_schema.ValidationInfo) -> Any:
        try:
            return model().model_validate(value, context=info.context)
        except ValidationError as e:
            raise from_validation_error(e) from None

    def each(values: list[Any], info: core_schema.ValidationInfo) -> list[Any]:
        cls, validated = model(), []
        for i, value in enumerate(values):
            try:
                validated.append(cls.model_validate(value, context=info.context))
            except ValidationError as e:
                raise from_validation_error(e, prefix=f"[{i}]") from None
        return validated

    if many:
        return Prebuilt(core_schema.with_info_after_validator_function(each, core_schema.list_schema(ANY)))
    return Prebuilt(core_schema.nullable_schema(core_schema.with_info_plain_validator_function(
        one, json_schema_input_schema=ANY)))
