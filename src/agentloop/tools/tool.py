"""Tools: the ``@tool`` decorator and the :class:`Tool` it returns."""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias, overload

from pydantic import BaseModel

from agentloop.errors import ConfigError
from agentloop.models.base import ToolSchema
from agentloop.tools.context import ToolContext
from agentloop.tools.schema import describe_function, fields_validator

Risk: TypeAlias = Literal["low", "medium", "high"]
RISKS: tuple[Risk, ...] = ("low", "medium", "high")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class Tool:
    """A function the model can call, with its schema and safety metadata.

    ``read_only`` tools may run in parallel with anything that does not write their paths and
    are cacheable by default. ``paths`` names the arguments that hold file paths: the scheduler
    uses them to find conflicts and the cache to invalidate results. ``risk`` is compared with
    the policy's auto-approve level. A Tool stays callable as the plain function.
    """

    def __init__(
        self,
        fn: Callable[..., Any] | None,
        *,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        read_only: bool = False,
        risk: Risk | None = None,
        paths: Sequence[str] = (),
        cacheable: bool | None = None,
        cache_ttl: float | None = None,
        timeout: float | None = None,
        args_model: type[BaseModel] | None = None,
        context_param: str | None = None,
    ) -> None:
        if not _NAME.match(name):
            raise ConfigError(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'")
        if risk is not None and risk not in RISKS:
            raise ConfigError(f"tool {name!r}: risk must be one of {', '.join(RISKS)}")
        if isinstance(paths, str):
            paths = (paths,)
        props = parameters.get("properties", {})
        for p in paths:
            if p not in props:
                raise ConfigError(f"tool {name!r}: paths names {p!r}, which is not a parameter")
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"tool {name!r}: timeout must be positive")
        self.fn = fn
        self.name = name
        self.description = description
        self.parameters = dict(parameters)
        self.read_only = read_only
        self.risk: Risk = risk or ("low" if read_only else "medium")
        self.paths: tuple[str, ...] = tuple(paths)
        self.cacheable = read_only if cacheable is None else cacheable
        self.cache_ttl = 30.0 if cache_ttl is None else float(cache_ttl)
        self.timeout = timeout
        self.args_model = args_model
        self.context_param = context_param
        self.is_async = fn is not None and inspect.iscoroutinefunction(fn)
        self.is_external = fn is None
        """True for schema-only tools that the client executes."""
        self._fields = fields_validator(args_model) if args_model is not None else None
        self.schema = ToolSchema(name=name, description=description, parameters=self.parameters)
        if fn is not None:
            functools.update_wrapper(self, fn)

    @classmethod
    def external(
        cls, name: str, description: str, parameters: Mapping[str, Any] | None = None
    ) -> Tool:
        """A schema-only tool executed by the client: calling it pauses the run."""
        return cls(
            None,
            name=name,
            description=description,
            parameters=parameters or {"type": "object", "properties": {}},
            cacheable=False,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fn is None:
            raise TypeError(f"tool {self.name!r} is executed by the client and has no function")
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, read_only={self.read_only}, risk={self.risk!r})"

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments (raises :class:`pydantic.ValidationError`)."""
        if self._fields is not None:
            values: dict[str, Any] = self._fields.validate_python(arguments)[0]
            return values
        if self.args_model is None:
            return dict(arguments)
        # The fields of a validated instance: its __dict__ holds exactly the fields (extra
        # fields, if the model allows them, are kept apart).
        validated: dict[str, Any] = self.args_model.model_validate(arguments).__dict__
        return validated

    def invoke(self, kwargs: dict[str, Any], ctx: ToolContext | None) -> Awaitable[Any]:
        """Run the function with validated ``kwargs``: an awaitable of its result. Async
        functions are called directly, sync ones in a worker thread. ``ctx`` is required when the
        function takes a :class:`ToolContext`."""
        fn = self.fn
        if fn is None:
            raise TypeError(f"tool {self.name!r} is executed by the client")
        if self.context_param is not None:
            if ctx is None:
                raise TypeError(f"tool {self.name!r} needs a ToolContext")
            kwargs = {**kwargs, self.context_param: ctx}
        if self.is_async:
            result: Awaitable[Any] = fn(**kwargs)
            return result
        return asyncio.to_thread(functools.partial(fn, **kwargs))


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    risk: Risk | None = None,
    paths: Sequence[str] = (),
    cacheable: bool | None = None,
    cache_ttl: float | None = None,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    risk: Risk | None = None,
    paths: Sequence[str] = (),
    cacheable: bool | None = None,
    cache_ttl: float | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a sync or async function into a :class:`Tool`.

    Use bare (``@tool``) or with options (``@tool(read_only=True, paths=("path",))``). The JSON
    Schema comes from the type hints, descriptions from the docstring; a parameter annotated
    :class:`ToolContext` is injected at call time and hidden from the schema.
    """

    def wrap(func: Callable[..., Any], depth: int = 1) -> Tool:
        tool_name = name or func.__name__
        localns = sys._getframe(depth).f_locals  # the defining scope, for local classes
        sig = describe_function(func, name=tool_name, description=description, localns=localns)
        return Tool(
            func,
            name=tool_name,
            description=sig.description,
            parameters=sig.parameters,
            read_only=read_only,
            risk=risk,
            paths=paths,
            cacheable=cacheable,
            cache_ttl=cache_ttl,
            timeout=timeout,
            args_model=sig.args_model,
            context_param=sig.context_param,
        )

    if fn is not None:
        return wrap(fn, depth=2)
    return wrap


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    """A Tool as is; a plain function wrapped with default options."""
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return tool(obj)
    raise ConfigError(f"{obj!r} is not a tool or a function")
