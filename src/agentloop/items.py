"""The item model: the one currency of the loop, the store and the gateway.

Items follow the Open Responses item model (``message``, ``function_call``,
``function_call_output``, ``reasoning``) so that they can be stored and returned on the wire
unchanged. They are frozen dataclasses: cheap to create, safe to share between turns without
copying. :func:`item_to_dict` and :func:`item_from_dict` are the only translation to and from JSON.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeAlias

from agentloop.errors import InvalidItem

Role: TypeAlias = Literal["user", "assistant", "system", "developer"]
Status: TypeAlias = Literal["in_progress", "completed", "incomplete"]


_TOKENS_PER_DRAW = 256
_tokens: Iterator[str] = iter(())
"""Random 24-hex-character tokens, drawn from ``os.urandom`` 256 at a time: one system call
per 256 ids instead of one per id (a loop turn makes several)."""


def _draw_tokens() -> Iterator[str]:
    raw = os.urandom(12 * _TOKENS_PER_DRAW).hex()
    return iter([raw[i : i + 24] for i in range(0, len(raw), 24)])


def _forget_tokens() -> None:
    """In a forked child: never hand out a token the parent may also hand out."""
    global _tokens
    _tokens = iter(())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_tokens)


def new_id(prefix: str) -> str:
    """A fresh, globally unique id such as ``fc_3f2a...`` (prefix + 24 random hex characters).

    Thread-safe: each token comes out of a list iterator, whose ``next`` runs under the GIL; two
    threads that find the pool empty at once each draw their own."""
    global _tokens
    try:
        token = next(_tokens)
    except StopIteration:
        _tokens = _draw_tokens()
        token = next(_tokens)
    return f"{prefix}_{token}"


# --- content parts -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class InputText:
    """Text given to the model (user, system or developer message)."""

    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class OutputText:
    """Text produced by the model (assistant message)."""

    text: str
    annotations: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class InputImage:
    """An image given to the model, as a URL (``https:`` or a ``data:`` URL) or a file id."""

    image_url: str | None = None
    file_id: str | None = None
    detail: Literal["low", "high", "auto"] = "auto"


@dataclass(frozen=True, kw_only=True, slots=True)
class Refusal:
    """The model declined to answer."""

    refusal: str


ContentPart: TypeAlias = InputText | OutputText | InputImage | Refusal


# --- items ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Message:
    """A message from the user, the system, the developer or the assistant."""

    role: Role
    content: tuple[ContentPart, ...]
    id: str | None = None
    status: Status = "completed"

    @property
    def type(self) -> Literal["message"]:
        return "message"

    @property
    def text(self) -> str:
        """All text of the message joined together (refusals included)."""
        parts: list[str] = []
        for part in self.content:
            if isinstance(part, InputText | OutputText):
                parts.append(part.text)
            elif isinstance(part, Refusal):
                parts.append(part.refusal)
        return "".join(parts)


@dataclass(frozen=True, kw_only=True, slots=True)
class FunctionCall:
    """The model asks for a tool call. ``arguments`` is the raw JSON text the model produced."""

    call_id: str
    name: str
    arguments: str
    id: str | None = None
    status: Status = "completed"

    @property
    def type(self) -> Literal["function_call"]:
        return "function_call"


@dataclass(frozen=True, kw_only=True, slots=True)
class FunctionCallOutput:
    """The result of a tool call, fed back to the model.

    ``is_error`` marks failures (unknown tool, bad arguments, a tool that raised, timeouts,
    refusals); it is kept in run state and stripped from the wire form, which has no such field.
    """

    call_id: str
    output: str
    id: str | None = None
    status: Status = "completed"
    is_error: bool = False

    @property
    def type(self) -> Literal["function_call_output"]:
        return "function_call_output"


@dataclass(frozen=True, kw_only=True, slots=True)
class Reasoning:
    """Reasoning the model exposed: summary texts, raw reasoning texts, or an opaque blob."""

    id: str | None = None
    summary: tuple[str, ...] = ()
    content: tuple[str, ...] = ()
    encrypted_content: str | None = None

    @property
    def type(self) -> Literal["reasoning"]:
        return "reasoning"


Item: TypeAlias = Message | FunctionCall | FunctionCallOutput | Reasoning


_ID_PREFIX = {Message: "msg", FunctionCall: "fc", FunctionCallOutput: "fco", Reasoning: "rs"}
_COPIED_FIELDS = {
    kind: tuple(f.name for f in fields(kind) if f.init and f.name != "id") for kind in _ID_PREFIX
}
"""Per item type, the fields :func:`with_id` copies (what ``dataclasses.replace`` would copy,
looked up once instead of on every call)."""


def with_id(item: Item) -> Item:
    """The item itself if it has an id, else a copy with a fresh one (``msg_``, ``fc_``...)."""
    if item.id is not None:
        return item
    kind = type(item)
    values = {name: getattr(item, name) for name in _COPIED_FIELDS[kind]}
    return kind(**values, id=new_id(_ID_PREFIX[kind]))


def user(text: str, *, id: str | None = None) -> Message:
    """A user message with one text part."""
    return Message(role="user", content=(InputText(text=text),), id=id)


def system(text: str) -> Message:
    """A system message with one text part."""
    return Message(role="system", content=(InputText(text=text),))


def assistant(text: str, *, id: str | None = None) -> Message:
    """An assistant message with one text part."""
    return Message(role="assistant", content=(OutputText(text=text),), id=id)


# --- usage ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """Token usage; adds up with ``+`` across turns and attempts."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    @classmethod
    def of(
        cls,
        input_tokens: int,
        output_tokens: int,
        *,
        cached_input_tokens: int = 0,
        reasoning_tokens: int = 0,
    ) -> Usage:
        """Usage with ``total_tokens`` computed."""
        return cls(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
            cached_input_tokens=cached_input_tokens,
            reasoning_tokens=reasoning_tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        """The Open Responses ``Usage`` object."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_input_tokens},
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        inp = data.get("input_tokens_details") or {}
        out = data.get("output_tokens_details") or {}
        return cls(
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            total_tokens=int(data.get("total_tokens", 0)),
            cached_input_tokens=int(inp.get("cached_tokens", 0)),
            reasoning_tokens=int(out.get("reasoning_tokens", 0)),
        )


# --- JSON translation ------------------------------------------------------------------------


def part_to_dict(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, InputText):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, OutputText):
        return {"type": "output_text", "text": part.text, "annotations": list(part.annotations)}
    if isinstance(part, InputImage):
        data: dict[str, Any] = {
            "type": "input_image",
            "image_url": part.image_url,
            "detail": part.detail,
        }
        if part.file_id is not None:
            data["file_id"] = part.file_id
        return data
    return {"type": "refusal", "refusal": part.refusal}


def item_to_dict(item: Item, *, wire: bool = False) -> dict[str, Any]:
    """Encode an item as Open Responses JSON.

    With ``wire=True`` the result is exactly the spec's shape (no ``is_error`` extension);
    otherwise it round-trips through :func:`item_from_dict` losslessly.
    """
    if isinstance(item, Message):
        data: dict[str, Any] = {
            "type": "message",
            "id": item.id,
            "status": item.status,
            "role": item.role,
            "content": [part_to_dict(p) for p in item.content],
        }
    elif isinstance(item, FunctionCall):
        data = {
            "type": "function_call",
            "id": item.id,
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.arguments,
            "status": item.status,
        }
    elif isinstance(item, FunctionCallOutput):
        data = {
            "type": "function_call_output",
            "id": item.id,
            "call_id": item.call_id,
            "output": item.output,
            "status": item.status,
        }
        if item.is_error and not wire:
            data["is_error"] = True
    else:
        data = {
            "type": "reasoning",
            "id": item.id,
            "summary": [{"type": "summary_text", "text": t} for t in item.summary],
        }
        if item.content:
            data["content"] = [{"type": "reasoning_text", "text": t} for t in item.content]
        if item.encrypted_content is not None:
            data["encrypted_content"] = item.encrypted_content
    if data.get("id") is None and not wire:
        del data["id"]
    return data


def _texts(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidItem(f"'{field}' must be a list of text parts")
    out: list[str] = []
    for part in value:
        if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
            raise InvalidItem(f"each part of '{field}' must be an object with a 'text' string")
        out.append(part["text"])
    return tuple(out)


_STATUSES: dict[Any, Status] = {"in_progress": "in_progress", "completed": "completed",
                                 "incomplete": "incomplete"}  # fmt: skip
_DETAILS: dict[Any, Literal["low", "high", "auto"]] = {"low": "low", "high": "high", "auto": "auto"}


def part_from_dict(data: Any, *, role: str) -> ContentPart:
    if not isinstance(data, Mapping):
        raise InvalidItem("a content part must be an object")
    kind = data.get("type")
    if kind in ("input_text", "output_text", "text"):
        text = data.get("text")
        if not isinstance(text, str):
            raise InvalidItem(f"content part '{kind}' needs a 'text' string")
        if kind == "output_text" or (kind == "text" and role == "assistant"):
            return OutputText(text=text, annotations=tuple(data.get("annotations") or ()))
        return InputText(text=text)
    if kind == "input_image":
        url, file_id = data.get("image_url"), data.get("file_id")
        if url is None and file_id is None:
            raise InvalidItem("an input_image needs 'image_url' or 'file_id'")
        detail = data.get("detail") or "auto"
        if detail not in _DETAILS:
            raise InvalidItem("input_image 'detail' must be one of low, high, auto")
        return InputImage(image_url=url, file_id=file_id, detail=_DETAILS[detail])
    if kind == "refusal":
        return Refusal(refusal=str(data.get("refusal", "")))
    raise InvalidItem(f"unsupported content part type {kind!r}")


def item_from_dict(data: Any) -> Item:
    """Decode one Open Responses item (request or response shape); raises :class:`InvalidItem`."""
    if not isinstance(data, Mapping):
        raise InvalidItem("an item must be an object")
    kind = data.get("type", "message" if "role" in data else None)
    raw_status = data.get("status") or "completed"
    if raw_status not in _STATUSES:
        raise InvalidItem(f"invalid item status {raw_status!r}")
    status = _STATUSES[raw_status]
    if kind == "message":
        role = data.get("role")
        if role not in ("user", "assistant", "system", "developer"):
            raise InvalidItem(f"invalid message role {role!r}")
        content = data.get("content")
        if isinstance(content, str):
            parts: tuple[ContentPart, ...] = (
                (OutputText(text=content),) if role == "assistant" else (InputText(text=content),)
            )
        elif isinstance(content, list):
            parts = tuple(part_from_dict(p, role=role) for p in content)
        else:
            raise InvalidItem("message 'content' must be a string or a list of parts")
        return Message(role=role, content=parts, id=data.get("id"), status=status)
    if kind == "function_call":
        call_id, name, args = data.get("call_id"), data.get("name"), data.get("arguments", "")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidItem("function_call needs a 'call_id' string")
        if not isinstance(name, str) or not name:
            raise InvalidItem("function_call needs a 'name' string")
        if not isinstance(args, str):
            raise InvalidItem("function_call 'arguments' must be a JSON string")
        return FunctionCall(
            call_id=call_id, name=name, arguments=args, id=data.get("id"), status=status
        )
    if kind == "function_call_output":
        call_id, output = data.get("call_id"), data.get("output")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidItem("function_call_output needs a 'call_id' string")
        if isinstance(output, list):
            output = "".join(str(p.get("text", "")) for p in output if isinstance(p, Mapping))
        if not isinstance(output, str):
            raise InvalidItem("function_call_output 'output' must be a string")
        return FunctionCallOutput(
            call_id=call_id,
            output=output,
            id=data.get("id"),
            status=status,
            is_error=bool(data.get("is_error", False)),
        )
    if kind == "reasoning":
        enc = data.get("encrypted_content")
        return Reasoning(
            id=data.get("id"),
            summary=_texts(data.get("summary"), "summary"),
            content=_texts(data.get("content"), "content"),
            encrypted_content=enc if isinstance(enc, str) else None,
        )
    raise InvalidItem(f"unsupported item type {kind!r}")


def to_items(
    value: str | Item | Mapping[str, Any] | Iterable[Item | Mapping[str, Any]],
) -> list[Item]:
    """Normalise run input: a string becomes one user message; dicts are decoded; every item
    gets an id."""
    if isinstance(value, str):
        return [user(value, id=new_id("msg"))]
    if isinstance(value, Message | FunctionCall | FunctionCallOutput | Reasoning):
        return [with_id(value)]
    if isinstance(value, Mapping):
        return [with_id(item_from_dict(value))]
    out: list[Item] = []
    for entry in value:
        if isinstance(entry, Message | FunctionCall | FunctionCallOutput | Reasoning):
            out.append(with_id(entry))
        else:
            out.append(with_id(item_from_dict(entry)))
    return out


def last_assistant_text(items: Sequence[Item]) -> str:
    """The text of the last assistant message, or ``""``."""
    for item in reversed(items):
        if isinstance(item, Message) and item.role == "assistant":
            return item.text
    return ""
