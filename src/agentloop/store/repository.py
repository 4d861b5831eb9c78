"""The store's operations. Every query is scoped to a tenant; another tenant's id is NotFound.

Items are stored per conversation in order (see :mod:`agentloop.store.schema`), so a
``previous_response_id`` chain of any length is rebuilt with two queries. Each public method is
one transaction (see :mod:`agentloop.store.database` for how it runs).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, CursorResult, delete, insert, literal, select, text, update
from sqlalchemy.engine import Engine, Row

from agentloop.items import new_id
from agentloop.store import schema as t
from agentloop.store.database import Database

RUNNING = ("queued", "in_progress")
KEY_PREFIX = "al-"


class NotFound(LookupError):
    """No such object for this tenant."""


class StoreConflict(RuntimeError):
    """The object is in a state that does not allow the operation (e.g. still running)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiKeyRecord:
    id: str
    tenant_id: str
    tenant_name: str
    name: str
    prefix: str
    created_at: int
    revoked_at: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseRecord:
    """A stored response. ``resource`` is its Open Responses object without ``output``."""

    id: str
    tenant_id: str
    conversation_id: str
    seq_start: int
    input_end: int
    seq_end: int
    previous_response_id: str | None
    status: str
    model: str
    created_at: int
    completed_at: int | None
    background: bool
    key_id: str | None
    resource: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class Chain:
    """A stored response and every item of its conversation up to its end, in order."""

    response: ResponseRecord
    items: list[dict[str, Any]]


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _now() -> int:
    return int(time.time())


def _loads_many(datas: Sequence[str]) -> list[dict[str, Any]]:
    """Decode many JSON objects with one parser call."""
    if not datas:
        return []
    decoded: list[dict[str, Any]] = json.loads("[" + ",".join(datas) + "]")
    return decoded


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _rowcount(result: CursorResult[Any]) -> int:
    return int(result.rowcount)


def _record(row: Row[Any]) -> ResponseRecord:
    m = row._mapping
    return ResponseRecord(
        id=m["id"],
        tenant_id=m["tenant_id"],
        conversation_id=m["conversation_id"],
        seq_start=m["seq_start"],
        input_end=m["input_end"],
        seq_end=m["seq_end"],
        previous_response_id=m["previous_response_id"],
        status=m["status"],
        model=m["model"],
        created_at=m["created_at"],
        completed_at=m["completed_at"],
        background=bool(m["background"]),
        key_id=m["key_id"],
        resource=json.loads(m["resource"]),
    )


def _get(conn: Connection, tenant_id: str, response_id: str) -> ResponseRecord:
    r = t.responses
    row = conn.execute(select(r).where(r.c.id == response_id, r.c.tenant_id == tenant_id)).first()
    if row is None:
        raise NotFound(response_id)
    return _record(row)


def _item_datas(conn: Connection, conversation_id: str, start: int, end: int) -> list[str]:
    i = t.items
    rows = conn.execute(
        select(i.c.data)
        .where(i.c.conversation_id == conversation_id, i.c.seq >= start, i.c.seq < end)
        .order_by(i.c.seq)
    )
    return [row[0] for row in rows]


def _insert_items(
    conn: Connection,
    conversation_id: str,
    start: int,
    response_id: str,
    items: Sequence[Mapping[str, Any]],
) -> None:
    if not items:
        return
    conn.execute(
        insert(t.items),
        [
            {
                "conversation_id": conversation_id,
                "seq": start + k,
                "response_id": response_id,
                "item_id": item.get("id"),
                "data": _dumps(item),
            }
            for k, item in enumerate(items)
        ],
    )


def _claim(
    conn: Connection, tenant_id: str, response_id: str, previous: ResponseRecord | None
) -> tuple[str, int]:
    """Where a new response's items go: after ``previous`` in its conversation when that is the
    conversation's head; otherwise in a new conversation holding a copy of the prefix (a fork)."""
    c = t.conversations
    base = 0
    if previous is not None:
        base = previous.seq_end
        claimed = conn.execute(
            update(c)
            .where(c.c.id == previous.conversation_id, c.c.head_response_id == previous.id)
            .values(head_response_id=response_id)
        )
        if _rowcount(claimed) == 1:
            return previous.conversation_id, base
    conv_id = new_id("conv")
    conn.execute(
        insert(c).values(
            id=conv_id, tenant_id=tenant_id, head_response_id=response_id, created_at=_now()
        )
    )
    if previous is not None and base:
        i = t.items
        conn.execute(
            insert(i).from_select(
                ["conversation_id", "seq", "response_id", "item_id", "data"],
                select(literal(conv_id), i.c.seq, i.c.response_id, i.c.item_id, i.c.data).where(
                    i.c.conversation_id == previous.conversation_id, i.c.seq < base
                ),
            )
        )
    return conv_id, base


def _audit_rows(
    tenant_id: str, key_id: str | None, response_id: str, audit: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    now = _now()
    return [
        {
            "tenant_id": tenant_id,
            "key_id": key_id,
            "response_id": response_id,
            "call_id": a["call_id"],
            "tool": a["tool"],
            "arguments": _dumps(a["arguments"]),
            "decision": a["decision"],
            "outcome": a["outcome"],
            "duration": float(a.get("duration", 0.0)),
            "cached": bool(a.get("cached", False)),
            "message": a.get("message"),
            "created_at": now,
        }
        for a in audit
    ]


def _key_query() -> Any:
    k, ten = t.api_keys, t.tenants
    return select(
        k.c.id,
        k.c.tenant_id,
        ten.c.name.label("tenant_name"),
        k.c.name,
        k.c.prefix,
        k.c.created_at,
        k.c.revoked_at,
    ).join(ten, ten.c.id == k.c.tenant_id)


def _key(row: Row[Any]) -> ApiKeyRecord:
    return ApiKeyRecord(**dict(row._mapping))


class Store:
    """Responses, conversation items, tenants, API keys and tool audit records."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    async def open(cls, url: str, *, migrate: bool = True) -> Store:
        """Connect and apply the migrations (once per process and URL)."""
        db = Database(url)
        if migrate and url not in _MIGRATED:
            await db.migrate()
            _MIGRATED.add(url)
        return cls(db)

    @property
    def sync_engine(self) -> Engine:
        return self.db.sync_engine

    async def aclose(self) -> None:
        await self.db.dispose()

    async def ping(self) -> None:
        await self.db.run(lambda conn: conn.execute(text("SELECT 1")))

    # --- tenants and keys ------------------------------------------------------------------

    async def ensure_tenant(self, name: str) -> str:
        """The id of the tenant called ``name``, created if needed."""

        def go(conn: Connection) -> str:
            found = conn.scalar(select(t.tenants.c.id).where(t.tenants.c.name == name))
            if found is not None:
                return str(found)
            new = new_id("ten")
            conn.execute(insert(t.tenants).values(id=new, name=name, created_at=_now()))
            return new

        return await self.db.run(go, write=True)

    async def create_key(self, tenant: str, name: str = "default") -> tuple[ApiKeyRecord, str]:
        """A new API key for ``tenant`` (created if needed). The secret is returned once; only
        its SHA-256 is stored."""
        tenant_id = await self.ensure_tenant(tenant)
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        record = ApiKeyRecord(
            id=new_id("key"),
            tenant_id=tenant_id,
            tenant_name=tenant,
            name=name,
            prefix=secret[:10],
            created_at=_now(),
            revoked_at=None,
        )
        values = {
            "id": record.id,
            "tenant_id": tenant_id,
            "name": name,
            "prefix": record.prefix,
            "hash": hash_key(secret),
            "created_at": record.created_at,
        }
        await self.db.run(
            lambda conn: conn.execute(insert(t.api_keys).values(**values)), write=True
        )
        return record, secret

    async def list_keys(self) -> list[ApiKeyRecord]:
        def go(conn: Connection) -> list[ApiKeyRecord]:
            return [_key(r) for r in conn.execute(_key_query().order_by(t.api_keys.c.created_at))]

        return await self.db.run(go)

    async def revoke_key(self, key_id: str) -> bool:
        k = t.api_keys

        def go(conn: Connection) -> bool:
            result = conn.execute(
                update(k)
                .where(k.c.id == key_id, k.c.revoked_at.is_(None))
                .values(revoked_at=_now())
            )
            return _rowcount(result) > 0

        return await self.db.run(go, write=True)

    async def authenticate(self, secret: str) -> ApiKeyRecord | None:
        """The active key with this secret, or None."""
        k = t.api_keys
        query = _key_query().where(k.c.hash == hash_key(secret), k.c.revoked_at.is_(None))

        def go(conn: Connection) -> ApiKeyRecord | None:
            row = conn.execute(query).first()
            return None if row is None else _key(row)

        return await self.db.run(go)

    async def has_active_keys(self) -> bool:
        query = select(t.api_keys.c.id).where(t.api_keys.c.revoked_at.is_(None)).limit(1)
        return await self.db.run(lambda conn: conn.scalar(query) is not None)

    # --- responses ---------------------------------------------------------------------------

    async def load_chain(self, tenant_id: str, response_id: str) -> Chain:
        """The response and its whole conversation up to its end: two queries."""

        def go(conn: Connection) -> tuple[ResponseRecord, list[str]]:
            record = _get(conn, tenant_id, response_id)
            return record, _item_datas(conn, record.conversation_id, 0, record.seq_end)

        record, datas = await self.db.run(go)
        return Chain(response=record, items=_loads_many(datas))

    async def get_record(self, tenant_id: str, response_id: str) -> ResponseRecord:
        """The response row alone: one query."""
        return await self.db.run(lambda conn: _get(conn, tenant_id, response_id))

    async def get_response(
        self, tenant_id: str, response_id: str
    ) -> tuple[ResponseRecord, list[dict[str, Any]]]:
        """The response and its output items."""

        def go(conn: Connection) -> tuple[ResponseRecord, list[str]]:
            record = _get(conn, tenant_id, response_id)
            datas = _item_datas(conn, record.conversation_id, record.input_end, record.seq_end)
            return record, datas

        record, datas = await self.db.run(go)
        return record, _loads_many(datas)

    async def create_response(
        self,
        *,
        response_id: str,
        tenant_id: str,
        key_id: str | None,
        model: str,
        created_at: int,
        background: bool,
        status: str,
        resource: Mapping[str, Any],
        input_items: Sequence[Mapping[str, Any]],
        previous: ResponseRecord | None,
    ) -> ResponseRecord:
        """Store a new (running) response and its input items after ``previous``' items."""
        n = len(input_items)

        def go(conn: Connection) -> dict[str, Any]:
            conv_id, base = _claim(conn, tenant_id, response_id, previous)
            values: dict[str, Any] = {
                "id": response_id,
                "tenant_id": tenant_id,
                "conversation_id": conv_id,
                "seq_start": base,
                "input_end": base + n,
                "seq_end": base + n,
                "previous_response_id": previous.id if previous else None,
                "status": status,
                "model": model,
                "created_at": created_at,
                "completed_at": None,
                "background": background,
                "key_id": key_id,
                "resource": _dumps(resource),
            }
            conn.execute(insert(t.responses).values(**values))
            _insert_items(conn, conv_id, base, response_id, input_items)
            return values

        values = await self.db.run(go, write=True)
        return ResponseRecord(**{**values, "resource": dict(resource)})

    async def store_response(
        self,
        *,
        response_id: str,
        tenant_id: str,
        key_id: str | None,
        model: str,
        created_at: int,
        background: bool,
        previous: ResponseRecord | None,
        status: str,
        completed_at: int | None,
        resource: Mapping[str, Any],
        input_items: Sequence[Mapping[str, Any]],
        output_items: Sequence[Mapping[str, Any]],
        audit: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """Store a finished response in one transaction (for responses nobody could see while
        they ran: neither streamed nor in the background)."""
        n = len(input_items)
        audit_rows = _audit_rows(tenant_id, key_id, response_id, audit)

        def go(conn: Connection) -> None:
            conv_id, base = _claim(conn, tenant_id, response_id, previous)
            conn.execute(
                insert(t.responses).values(
                    id=response_id,
                    tenant_id=tenant_id,
                    conversation_id=conv_id,
                    seq_start=base,
                    input_end=base + n,
                    seq_end=base + n + len(output_items),
                    previous_response_id=previous.id if previous else None,
                    status=status,
                    model=model,
                    created_at=created_at,
                    completed_at=completed_at,
                    background=background,
                    key_id=key_id,
                    resource=_dumps(resource),
                )
            )
            _insert_items(conn, conv_id, base, response_id, [*input_items, *output_items])
            if audit_rows:
                conn.execute(insert(t.tool_audit), audit_rows)

        await self.db.run(go, write=True)

    async def finish_response(
        self,
        record: ResponseRecord,
        *,
        status: str,
        completed_at: int | None,
        resource: Mapping[str, Any],
        output_items: Sequence[Mapping[str, Any]],
        audit: Sequence[Mapping[str, Any]] = (),
    ) -> bool:
        """Record how a running response ended, with its output items and audit records.

        False (and nothing written) when it was no longer running (cancelled elsewhere)."""
        r = t.responses
        end = record.input_end + len(output_items)
        audit_rows = _audit_rows(record.tenant_id, record.key_id, record.id, audit)

        def go(conn: Connection) -> bool:
            done = conn.execute(
                update(r)
                .where(r.c.id == record.id, r.c.status.in_(RUNNING))
                .values(
                    status=status,
                    completed_at=completed_at,
                    seq_end=end,
                    resource=_dumps(resource),
                )
            )
            if _rowcount(done) != 1:
                return False
            _insert_items(conn, record.conversation_id, record.input_end, record.id, output_items)
            if audit_rows:
                conn.execute(insert(t.tool_audit), audit_rows)
            return True

        return await self.db.run(go, write=True)

    async def mark_ended(
        self, tenant_id: str, response_id: str, *, status: str, resource: Mapping[str, Any]
    ) -> bool:
        """End a running response that no worker here is running (crashed or elsewhere)."""
        r = t.responses

        def go(conn: Connection) -> bool:
            done = conn.execute(
                update(r)
                .where(r.c.id == response_id, r.c.tenant_id == tenant_id, r.c.status.in_(RUNNING))
                .values(status=status, completed_at=_now(), resource=_dumps(resource))
            )
            return _rowcount(done) > 0

        return await self.db.run(go, write=True)

    async def request_cancel(self, tenant_id: str, response_id: str) -> bool:
        """Ask whichever worker runs this response to cancel it (it polls for the flag).
        False when it is not running (any more)."""
        r = t.responses

        def go(conn: Connection) -> bool:
            done = conn.execute(
                update(r)
                .where(r.c.id == response_id, r.c.tenant_id == tenant_id, r.c.status.in_(RUNNING))
                .values(cancel_requested=True)
            )
            return _rowcount(done) > 0

        return await self.db.run(go, write=True)

    async def cancel_requests(self, response_ids: Sequence[str]) -> set[str]:
        """Which of these running responses (ids this worker runs, so no tenant scope is
        needed) another worker asked to cancel: one query."""
        if not response_ids:
            return set()
        r = t.responses
        ids = list(response_ids)

        def go(conn: Connection) -> set[str]:
            rows = conn.execute(
                select(r.c.id).where(
                    r.c.id.in_(ids), r.c.cancel_requested.is_(True), r.c.status.in_(RUNNING)
                )
            )
            return {str(row[0]) for row in rows}

        return await self.db.run(go)

    async def delete_response(self, tenant_id: str, response_id: str) -> None:
        """Delete a finished response. Its items go too unless later responses build on them."""
        r, c, i = t.responses, t.conversations, t.items

        def go(conn: Connection) -> None:
            record = _get(conn, tenant_id, response_id)
            if record.status in RUNNING:
                raise StoreConflict(response_id)
            conn.execute(delete(r).where(r.c.id == record.id))
            rewound = conn.execute(
                update(c)
                .where(c.c.id == record.conversation_id, c.c.head_response_id == record.id)
                .values(head_response_id=record.previous_response_id)
            )
            if _rowcount(rewound) == 1:
                conn.execute(
                    delete(i).where(
                        i.c.conversation_id == record.conversation_id,
                        i.c.seq >= record.seq_start,
                    )
                )

        await self.db.run(go, write=True)

    async def input_items(
        self,
        tenant_id: str,
        response_id: str,
        *,
        after: str | None = None,
        limit: int = 20,
        order: str = "desc",
    ) -> tuple[list[dict[str, Any]], bool]:
        """A page of the response's input items and whether more follow."""
        i = t.items

        def go(conn: Connection) -> list[str]:
            record = _get(conn, tenant_id, response_id)
            conds = [
                i.c.conversation_id == record.conversation_id,
                i.c.seq >= record.seq_start,
                i.c.seq < record.input_end,
            ]
            if after is not None:
                anchor = (
                    select(i.c.seq)
                    .where(i.c.conversation_id == record.conversation_id, i.c.item_id == after)
                    .scalar_subquery()
                )
                conds.append(i.c.seq > anchor if order == "asc" else i.c.seq < anchor)
            ordering = i.c.seq.asc() if order == "asc" else i.c.seq.desc()
            rows = conn.execute(select(i.c.data).where(*conds).order_by(ordering).limit(limit + 1))
            return [row[0] for row in rows]

        datas = await self.db.run(go)
        return _loads_many(datas[:limit]), len(datas) > limit

    async def audit_records(self, tenant_id: str, response_id: str) -> list[dict[str, Any]]:
        a = t.tool_audit

        def go(conn: Connection) -> list[dict[str, Any]]:
            rows = conn.execute(
                select(a)
                .where(a.c.tenant_id == tenant_id, a.c.response_id == response_id)
                .order_by(a.c.id)
            )
            return [dict(row._mapping) for row in rows]

        out = await self.db.run(go)
        for record in out:
            record["arguments"] = json.loads(record["arguments"])
        return out


_MIGRATED: set[str] = set()
