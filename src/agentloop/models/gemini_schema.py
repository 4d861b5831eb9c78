"""JSON Schema -> the OpenAPI 3.0 subset Gemini accepts for function ``parameters``.

Gemini's ``Schema`` knows ``type`` (upper case), ``format``, ``description``, ``nullable``,
``enum`` (strings only), ``items``, ``properties``, ``required``, ``anyOf`` and the usual
length/size/range bounds. Everything else is rewritten or dropped:

- ``$ref`` (``#/$defs/...``, ``#/definitions/...`` or any local JSON pointer) is inlined; a
  recursive reference becomes a plain ``OBJECT`` at the point where it recurs. ``$defs`` go away.
- ``type: [..., "null"]``, ``anyOf``/``oneOf`` with a ``null`` branch and ``enum`` with ``null``
  become ``nullable: true``; a one-branch ``anyOf`` is flattened; ``oneOf`` becomes ``anyOf``;
  ``allOf`` is merged into its parent.
- ``const`` becomes a one-value ``enum`` (strings) or a description hint; non-string enums and
  string formats Gemini rejects (anything but ``enum`` and ``date-time``) move to the description,
  as does ``default``.
- ``additionalProperties``, ``title``, ``examples``, ``$schema``, ``$id``, ``not``,
  ``patternProperties``, ``exclusiveMinimum``/``exclusiveMaximum`` and unknown keywords are dropped;
  ``required`` keeps only names that are among ``properties``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["to_gemini_schema"]

Refs = tuple[str, ...]

_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}
_FORMATS = {"STRING": {"enum", "date-time"}, "INTEGER": {"int32", "int64"},
            "NUMBER": {"float", "double"}}  # fmt: skip
_BOUNDS = ("minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength", "pattern",
           "minProperties", "maxProperties")  # fmt: skip


def to_gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The Gemini form of a JSON Schema (the input is not modified)."""
    return _Converter(schema).convert(schema, ())


def _hint(description: str | None, hint: str) -> str:
    return f"{description} ({hint})" if description else hint.capitalize()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class _Converter:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    # --- references ------------------------------------------------------------------------

    def _resolve(self, ref: str) -> Mapping[str, Any] | None:
        if not ref.startswith("#"):
            return None  # remote references cannot be followed
        node: Any = self.root
        for token in (t for t in ref[1:].split("/") if t):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
        return node if isinstance(node, Mapping) else None

    def _expand(self, schema: Mapping[str, Any], seen: Refs) -> tuple[dict[str, Any], Refs] | None:
        """The schema with ``$ref`` and ``allOf`` merged in; None for a recursive reference.

        ``seen`` holds the references being expanded on the way down to this schema."""
        out = dict(schema)
        while "$ref" in out:
            ref = out.pop("$ref")
            if not isinstance(ref, str):
                continue
            if ref in seen:
                return None
            target = self._resolve(ref)
            seen = (*seen, ref)
            if target is not None:
                out = {**target, **out}  # sibling keywords (a description...) win
        for part in out.pop("allOf", None) or []:
            if isinstance(part, Mapping):
                expanded = self._expand(part, seen)
                if expanded is not None:
                    out = _merge(out, expanded[0])
        return out, seen

    # --- conversion ------------------------------------------------------------------------

    def convert(self, schema: Mapping[str, Any], seen: Refs) -> dict[str, Any]:
        expanded = self._expand(schema, seen)
        if expanded is None:
            return {"type": "OBJECT", "description": "(recursive structure)"}
        src, seen = expanded
        out: dict[str, Any] = {}
        description = src.get("description") if isinstance(src.get("description"), str) else None
        nullable = False

        variants = src.get("anyOf") or src.get("oneOf")
        if isinstance(variants, list):
            branches = [v for v in variants if isinstance(v, Mapping)]
            kept = [v for v in branches if v.get("type") != "null"]
            nullable = len(kept) < len(branches)
            if len(kept) == 1:
                inner = self.convert(kept[0], seen)
                if description:
                    inner["description"] = description
                if nullable or src.get("nullable") is True:
                    inner["nullable"] = True
                return inner
            if kept:
                out["anyOf"] = [self.convert(v, seen) for v in kept]

        kind = src.get("type")
        if isinstance(kind, list):
            names = [k for k in kind if isinstance(k, str)]
            nullable = nullable or "null" in names
            names = [k for k in names if k != "null"]
            if len(names) > 1 and "anyOf" not in out:
                out["anyOf"] = [self.convert({**src, "type": k}, seen) for k in names]
                kind = None
            else:
                kind = names[0] if names else None
        gemini_type = _TYPES.get(kind) if isinstance(kind, str) else None
        if gemini_type is None and "anyOf" not in out:
            gemini_type = _infer_type(src)
        if gemini_type:
            out["type"] = gemini_type

        description = self._values(src, out, gemini_type, description)
        nullable = nullable or src.get("nullable") is True or None in (src.get("enum") or ())

        if gemini_type == "OBJECT":
            self._object(src, out, seen)
        elif gemini_type == "ARRAY":
            items = src.get("items")
            if isinstance(items, Mapping):
                out["items"] = self.convert(items, seen)
            elif isinstance(items, list) and items and isinstance(items[0], Mapping):
                out["items"] = self.convert(items[0], seen)  # tuple form: first item's schema
        for key in _BOUNDS:
            if key in src and isinstance(src[key], int | float | str):
                out[key] = src[key]
        if description:
            out["description"] = description
        if nullable:
            out["nullable"] = True
        return out

    def _values(
        self,
        src: Mapping[str, Any],
        out: dict[str, Any],
        gemini_type: str | None,
        description: str | None,
    ) -> str | None:
        """enum / const / format / default; returns the description with any hints added."""
        values = src.get("enum")
        if "const" in src and values is None:
            values = [src["const"]]
        if isinstance(values, list):
            present = [v for v in values if v is not None]
            if (
                present
                and all(isinstance(v, str) for v in present)
                and gemini_type
                in (
                    "STRING",
                    None,
                )
            ):
                out["enum"] = present
                out.setdefault("type", "STRING")
            elif present:
                description = _hint(description, "one of: " + ", ".join(map(_json, present)))
        fmt = src.get("format")
        if isinstance(fmt, str) and gemini_type in _FORMATS:
            if fmt in _FORMATS[gemini_type]:
                out["format"] = fmt
            else:
                description = _hint(description, f"format: {fmt}")
        if "default" in src and src["default"] is not None:
            description = _hint(description, f"default: {_json(src['default'])}")
        return description

    def _object(self, src: Mapping[str, Any], out: dict[str, Any], seen: Refs) -> None:
        properties = src.get("properties")
        if isinstance(properties, Mapping) and properties:
            out["properties"] = {
                str(name): self.convert(sub if isinstance(sub, Mapping) else {}, seen)
                for name, sub in properties.items()
            }
            required = src.get("required")
            if isinstance(required, list):
                names = [r for r in required if isinstance(r, str) and r in out["properties"]]
                if names:
                    out["required"] = names


def _infer_type(src: Mapping[str, Any]) -> str | None:
    if "properties" in src or "additionalProperties" in src:
        return "OBJECT"
    if "items" in src:
        return "ARRAY"
    values = src.get("enum") if "enum" in src else [src["const"]] if "const" in src else None
    if isinstance(values, list):
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, str) for v in present):
            return "STRING"
        if present and all(isinstance(v, bool) for v in present):
            return "BOOLEAN"
        if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            return "INTEGER"
        if present and all(isinstance(v, int | float) for v in present):
            return "NUMBER"
    return None


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``allOf`` merging: properties and required lists combine; other keys fill gaps."""
    out = dict(base)
    for key, value in extra.items():
        if key == "properties" and isinstance(value, Mapping):
            out["properties"] = {**value, **(out.get("properties") or {})}
        elif key == "required" and isinstance(value, list):
            out["required"] = list(dict.fromkeys([*(out.get("required") or []), *value]))
        else:
            out.setdefault(key, value)
    return out
