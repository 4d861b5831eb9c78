"""Small translations shared by the non-OpenAI adapters (Anthropic, Gemini, Ollama).

The system prompt (instructions plus any system/developer messages), tool-call arguments as a
JSON object, and ``data:`` URLs split into media type and base64 data.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote_to_bytes

from agentloop.items import FunctionCall, Item, Message
from agentloop.models.base import ModelRequest

INVALID_JSON_KEY = "INVALID_JSON"
"""Arguments that were not a JSON object are sent back as ``{"INVALID_JSON": "<raw text>"}``.

Anthropic, Gemini and Ollama want a tool call's input as an object, but a model sometimes
produces broken JSON; the loop has then already answered that call with an error output. Keeping
the raw text (rather than sending ``{}``) lets the model see what it got wrong next to that error.
"""


def is_system(item: Item) -> bool:
    """A system or developer message: it goes to the provider's system prompt."""
    return isinstance(item, Message) and item.role in ("system", "developer")


def system_prompt(request: ModelRequest) -> str | None:
    """The instructions followed by the text of every system/developer message, in order."""
    parts = [request.instructions] if request.instructions else []
    parts.extend(
        item.text for item in request.items if isinstance(item, Message) and is_system(item)
    )
    text = "\n\n".join(p for p in parts if p)
    return text or None


def arguments_object(raw: str) -> dict[str, Any]:
    """A call's arguments as a JSON object (see :data:`INVALID_JSON_KEY` for broken ones)."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {INVALID_JSON_KEY: raw}
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: raw}


def arguments_json(value: Any) -> str:
    """A provider's argument object as the JSON text a :class:`FunctionCall` carries."""
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


def call_names(items: Iterable[Item]) -> dict[str, str]:
    """call_id -> tool name, for providers whose tool results must repeat the name."""
    return {i.call_id: i.name for i in items if isinstance(i, FunctionCall)}


def split_data_url(url: str) -> tuple[str, str] | None:
    """``data:<media type>;base64,<data>`` as (media type, base64 data); None for other URLs."""
    if not url.startswith("data:"):
        return None
    header, sep, data = url[5:].partition(",")
    if not sep:
        return None
    fields = header.split(";")
    media_type = fields[0] or "application/octet-stream"
    if "base64" not in fields[1:]:
        return media_type, base64.b64encode(unquote_to_bytes(data)).decode("ascii")
    return media_type, data
