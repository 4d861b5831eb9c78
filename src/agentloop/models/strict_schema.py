"""OpenAI "strict" JSON Schemas: the subset that constrained decoding accepts.

Strict function calling and structured outputs need every object to list all its properties in
``required`` and to say ``additionalProperties: false``. :func:`strict_schema` rewrites an
ordinary schema (a tool's arguments, an output type) into that form: optional properties become
required-but-nullable, ``oneOf`` becomes ``anyOf``, ``$ref`` with siblings is inlined and
``default`` is dropped (the API rejects it). Free-form maps cannot be expressed and raise
:class:`StrictSchemaError`.

Because optional properties turn nullable, a strict model sends ``null`` where it would have left
a property out. :func:`drop_added_nulls` removes exactly those nulls again, so a tool whose
parameter is ``x: int = 5`` still receives its default rather than ``None``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from agentloop.errors import ConfigError

__all__ = ["StrictSchemaError", "drop_added_nulls", "is_strict_compatible", "strict_schema"]


class StrictSchemaError(ConfigError):
    """The schema cannot be made strict (e.g. a free-form object with arbitrary keys)."""


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A strict-compatible copy of ``schema``; raises :class:`StrictSchemaError` if impossible.

    Idempotent: a schema that is already strict comes back equal.
    """
    root = copy.deepcopy(dict(schema))
    bare = root.get("type") == "object" and "properties" not in root
    if bare and root.get("additionalProperties") in (None, False):
        root["properties"] = {}  # a tool without parameters: "no keys at all" is expressible
    return _strict(root, root=root, path="#")


def is_strict_compatible(schema: Mapping[str, Any]) -> bool:
    """Whether :func:`strict_schema` can rewrite ``schema``."""
    try:
        strict_schema(schema)
    except StrictSchemaError:
        return False
    return True


def _strict(node: dict[str, Any], *, root: dict[str, Any], path: str) -> dict[str, Any]:
    for defs_key in ("$defs", "definitions"):
        defs = node.get(defs_key)
        if isinstance(defs, dict):
            for name, sub in defs.items():
                defs[name] = _strict(dict(sub), root=root, path=f"{path}/{defs_key}/{name}")

    node.pop("default", None)
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        node.pop("allOf")
        node = {**all_of[0], **node}
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        # strict mode forbids siblings next to $ref: inline the target under them
        others = {k: v for k, v in node.items() if k != "$ref"}
        node = {**copy.deepcopy(_resolve(root, ref, path)), **others}
        return _strict(node, root=root, path=path)

    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
        node.pop("discriminator", None)
    for key in ("anyOf", "allOf"):
        variants = node.get(key)
        if isinstance(variants, list):
            node[key] = [
                _strict(dict(v), root=root, path=f"{path}/{key}/{i}")
                for i, v in enumerate(variants)
            ]
    if _is_object(node):
        _strict_object(node, root=root, path=path)
    items = node.get("items")
    if isinstance(items, dict):
        node["items"] = _strict(dict(items), root=root, path=f"{path}/items")
    prefix = node.get("prefixItems")
    if isinstance(prefix, list):
        node["prefixItems"] = [
            _strict(dict(v), root=root, path=f"{path}/prefixItems/{i}")
            for i, v in enumerate(prefix)
        ]
    return node


def _strict_object(node: dict[str, Any], *, root: dict[str, Any], path: str) -> None:
    extra = node.get("additionalProperties")
    props = node.get("properties")
    if extra not in (None, False) or not isinstance(props, dict):
        raise StrictSchemaError(
            f"the schema at {path} is an object with arbitrary keys, which OpenAI strict mode "
            "cannot express; give it fixed properties or turn strict off for it"
        )
    required = set(node.get("required") or ())
    out: dict[str, Any] = {}
    for name, sub in props.items():
        child = _strict(dict(sub), root=root, path=f"{path}/properties/{name}")
        if name not in required and not _allows_null(child, root):
            child = _nullable(child)
        out[name] = child
    node["properties"] = out
    node["required"] = list(out)
    node["additionalProperties"] = False


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if isinstance(kind, list):
        return "object" in kind
    return kind == "object" or (kind is None and "properties" in node)


def _allows_null(node: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in node:
        return node["const"] is None
    if "enum" in node and None in node["enum"]:
        return True
    variants = node.get("anyOf")
    if isinstance(variants, list):
        return any(isinstance(v, Mapping) and _allows_null(v, root) for v in variants)
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) == 1:
        target = _resolve(root, ref, "#")
        return isinstance(target, Mapping) and _allows_null(target, root)
    return False


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    kind = node.get("type")
    if isinstance(kind, str | list) and not ({"enum", "const"} & node.keys()):
        types = [kind] if isinstance(kind, str) else list(kind)
        return {**node, "type": [*types, "null"]}
    wrapper: dict[str, Any] = {}
    inner = dict(node)
    if "description" in inner:
        wrapper["description"] = inner.pop("description")
    wrapper["anyOf"] = [inner, {"type": "null"}]
    return wrapper


def _resolve(root: Mapping[str, Any], ref: str, path: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise StrictSchemaError(f"the schema at {path} refers to {ref!r}; only local refs work")
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, Mapping) or part not in target:
            raise StrictSchemaError(f"the schema at {path} refers to {ref!r}, which is missing")
        target = target[part]
    if not isinstance(target, Mapping):
        raise StrictSchemaError(f"the schema at {path} refers to {ref!r}, which is no schema")
    return dict(target)


# --- undoing the nullability on the way back ---------------------------------------------


def drop_added_nulls(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` (decoded JSON that followed ``strict_schema(schema)``) with every ``null``
    removed that stands for an optional property left out under the *original* ``schema``.

    Nulls the original schema allows are kept. Returns ``value`` itself when nothing changed.
    """
    return _drop(schema, value, schema, depth=0)


def _drop(node: Mapping[str, Any], value: Any, root: Mapping[str, Any], *, depth: int) -> Any:
    if depth > 64:
        return value
    ref = node.get("$ref")
    if isinstance(ref, str):
        try:
            node = {**_resolve(root, ref, "#"), **{k: v for k, v in node.items() if k != "$ref"}}
        except StrictSchemaError:
            return value
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
        node = {**all_of[0], **{k: v for k, v in node.items() if k != "allOf"}}
    if isinstance(value, dict) and isinstance(node.get("properties"), Mapping):
        props: Mapping[str, Any] = node["properties"]
        required = set(node.get("required") or ())
        out: dict[str, Any] = {}
        changed = False
        for key, item in value.items():
            sub = props.get(key)
            if not isinstance(sub, Mapping):
                out[key] = item
            elif item is None and key not in required and not _allows_null(sub, root):
                changed = True
            else:
                new = _drop(sub, item, root, depth=depth + 1)
                changed = changed or new is not item
                out[key] = new
        return out if changed else value
    items = node.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        new_list = [_drop(items, v, root, depth=depth + 1) for v in value]
        if any(a is not b for a, b in zip(new_list, value, strict=True)):
            return new_list
        return value
    variants = node.get("anyOf") or node.get("oneOf")
    if isinstance(variants, list) and isinstance(value, dict):
        objects = [v for v in variants if isinstance(v, Mapping) and _is_object_like(v, root)]
        if len(objects) == 1:
            return _drop(objects[0], value, root, depth=depth + 1)
    return value


def _is_object_like(node: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    ref = node.get("$ref")
    if isinstance(ref, str):
        try:
            node = _resolve(root, ref, "#")
        except StrictSchemaError:
            return False
    return _is_object(node)
