"""The @tool decorator: schemas from type hints, docstrings, context injection, metadata."""

from __future__ import annotations

from typing import Literal

import pydantic
import pytest
from pydantic import BaseModel, model_validator

from agentloop import ConfigError, Tool, ToolContext, tool


def test_schema_from_type_hints_and_google_docstring() -> None:
    @tool
    def search(query: str, limit: int = 10, mode: Literal["fast", "exact"] = "fast") -> str:
        """Search the notes.

        Args:
            query: What to look for.
            limit: Most results to return.
            mode: Matching mode.
        """
        return query

    assert search.name == "search"
    assert search.description == "Search the notes."
    props = search.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "What to look for."}
    assert props["limit"]["type"] == "integer"
    assert props["limit"]["default"] == 10
    assert props["limit"]["description"] == "Most results to return."
    assert props["mode"]["enum"] == ["fast", "exact"]
    assert search.parameters["required"] == ["query"]
    assert search.parameters["additionalProperties"] is False


def test_tool_context_is_injected_and_hidden_from_schema() -> None:
    @tool
    def where(ctx: ToolContext, name: str) -> str:
        """Say where."""
        return f"{ctx.workspace}/{name}"

    assert list(where.parameters["properties"]) == ["name"]
    assert where.context_param == "ctx"


def test_defaults_risk_and_options() -> None:
    @tool(read_only=True)
    def read(path: str) -> str:
        return path

    @tool
    def write(path: str) -> None:
        return None

    @tool(name="rm", description="Delete a file.", risk="high", paths=("path",), timeout=5)
    def delete(path: str) -> None:
        return None

    assert read.risk == "low" and read.read_only and read.cacheable
    assert write.risk == "medium" and not write.read_only and not write.cacheable
    assert delete.name == "rm" and delete.description == "Delete a file."
    assert delete.risk == "high" and delete.paths == ("path",) and delete.timeout == 5
    assert read.cache_ttl == 30.0


def test_tool_stays_callable_as_the_plain_function() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    @tool
    async def aadd(a: int, b: int) -> int:
        return a + b

    assert add(2, 3) == 5
    assert add.__name__ == "add"
    assert isinstance(add, Tool) and aadd.is_async and not add.is_async


def test_validation_converts_and_rejects_with_field_names() -> None:
    class Point(pydantic.BaseModel):
        x: int
        y: int

    @tool
    def plot(point: Point, label: str = "") -> str:
        return label

    kwargs = plot.validate({"point": {"x": "1", "y": 2}})
    assert kwargs["point"] == Point(x=1, y=2)
    with pytest.raises(pydantic.ValidationError) as err:
        plot.validate({"point": {"x": 1}})
    assert "point.y" in str(err.value) or "y" in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "bad name"}, "must be 1-64"),
        ({"risk": "extreme"}, "risk must be one of"),
        ({"paths": ("nope",)}, "not a parameter"),
        ({"timeout": 0}, "timeout must be positive"),
    ],
)
def test_bad_definitions_are_config_errors(kwargs: dict[str, object], message: str) -> None:
    def f(path: str) -> str:
        return path

    with pytest.raises(ConfigError, match=message):
        tool(**kwargs)(f)  # type: ignore[call-overload]


def test_var_args_are_refused() -> None:
    def f(*args: int) -> int:
        return 0

    with pytest.raises(ConfigError, match="args"):
        tool(f)


def test_external_tool_is_schema_only() -> None:
    t = Tool.external("lookup", "Look up a user.", {"type": "object", "properties": {}})
    assert t.is_external and t.name == "lookup" and t.description == "Look up a user."
    with pytest.raises(TypeError):
        t()


class _Point(BaseModel):
    x: int
    y: int


class _Tree(BaseModel):
    v: int
    kids: list[_Tree] = []


class _NonNegative(BaseModel):
    a: int

    @model_validator(mode="after")
    def _check(self) -> _NonNegative:
        if self.a < 0:
            raise ValueError("a must be >= 0")
        return self


def test_validate_gives_typed_keyword_arguments_for_every_kind_of_model() -> None:
    @tool
    def place(p: _Point, label: str = "a") -> str:
        return f"{p.x},{p.y} {label}"

    @tool
    def walk(t: _Tree) -> int:
        return t.v

    assert place.validate({"p": {"x": 1, "y": 2}}) == {"p": _Point(x=1, y=2), "label": "a"}
    assert walk.validate({"t": {"v": 1, "kids": [{"v": 2}]}}) == {
        "t": _Tree(v=1, kids=[_Tree(v=2)])
    }
    checked = Tool(
        lambda a: a, name="checked", description="", parameters=_NonNegative.model_json_schema(),
        args_model=_NonNegative,
    )  # fmt: skip
    assert checked.validate({"a": 2}) == {"a": 2}
    with pytest.raises(pydantic.ValidationError, match="a must be >= 0"):
        checked.validate({"a": -1})
    with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted"):
        place.validate({"p": {"x": 1, "y": 2}, "b": 2})
