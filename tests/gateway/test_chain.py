"""previous_response_id chains: rebuilt from the store in a constant number of queries however
long the chain; forks; store=false; missing ids and missing tool outputs."""

from __future__ import annotations

import json

import openai
import pytest
from tests.gateway.conftest import GatewayFactory
from tests.gateway.fakes import CountingModel

pytestmark = pytest.mark.anyio

CHAIN = 500


async def test_a_500_turn_chain_costs_a_constant_number_of_queries(
    make_gateway: GatewayFactory,
) -> None:
    async with make_gateway(models={"counting": CountingModel()}) as gw:
        previous = None
        counts: dict[int, int] = {}
        statements: dict[int, list[str]] = {}
        for turn in range(1, CHAIN + 1):
            if turn in (10, 100, CHAIN):
                gw.service.history.clear()  # measure the rebuild from the store itself
            gw.queries.reset()
            r = await gw.client.responses.create(
                model="counting", input=f"turn {turn}", previous_response_id=previous
            )
            # the local-mode "are there API keys yet?" check runs every few seconds, whatever
            # the chain: it is not part of rebuilding the conversation
            statements[turn] = [q for q in gw.queries.statements if "agentloop_api_keys" not in q]
            counts[turn] = len(statements[turn])
            previous = r.id
            # each turn adds a user message and an answer: the model saw them all
            assert r.output_text == f"{2 * turn - 1} items"
        assert counts[10] == counts[100] == counts[CHAIN], (
            counts[10], counts[100], counts[CHAIN], statements[10], statements[100],
            statements[CHAIN],
        )  # fmt: skip
        assert counts[CHAIN] <= 8, gw.queries.statements
        # continuing on the worker that stored the previous response: one query fewer
        assert counts[CHAIN - 1] == counts[CHAIN] - 1


async def test_continuing_an_earlier_response_forks_the_conversation(
    make_gateway: GatewayFactory,
) -> None:
    async with make_gateway(models={"counting": CountingModel()}) as gw:
        a = await gw.client.responses.create(model="counting", input="a")
        b = await gw.client.responses.create(model="counting", input="b", previous_response_id=a.id)
        c = await gw.client.responses.create(model="counting", input="c", previous_response_id=b.id)
        fork = await gw.client.responses.create(
            model="counting", input="b'", previous_response_id=a.id
        )
        assert (c.output_text, fork.output_text) == ("5 items", "3 items")
        deeper = await gw.client.responses.create(
            model="counting", input="c'", previous_response_id=fork.id
        )
        on_main = await gw.client.responses.create(
            model="counting", input="d", previous_response_id=c.id
        )
        assert (deeper.output_text, on_main.output_text) == ("5 items", "7 items")
        # deleting the head of a branch leaves the rest intact
        await gw.client.responses.delete(on_main.id)
        again = await gw.client.responses.create(
            model="counting", input="d2", previous_response_id=c.id
        )
        assert again.output_text == "7 items"


async def test_store_false_is_not_retrievable_and_cannot_be_continued(
    make_gateway: GatewayFactory,
) -> None:
    async with make_gateway() as gw:
        r = await gw.client.responses.create(model="scripted", input="ephemeral", store=False)
        assert r.status == "completed" and r.store is False
        with pytest.raises(openai.NotFoundError):
            await gw.client.responses.retrieve(r.id)
        with pytest.raises(openai.NotFoundError) as err:
            await gw.client.responses.create(
                model="scripted", input="more", previous_response_id=r.id
            )
        assert err.value.body["param"] == "previous_response_id"  # type: ignore[index]


async def test_store_false_may_continue_a_stored_response(make_gateway: GatewayFactory) -> None:
    async with make_gateway(models={"counting": CountingModel()}) as gw:
        a = await gw.client.responses.create(model="counting", input="a")
        b = await gw.client.responses.create(
            model="counting", input="b", previous_response_id=a.id, store=False
        )
        assert b.output_text == "3 items"
        c = await gw.client.responses.create(model="counting", input="c", previous_response_id=a.id)
        assert c.output_text == "3 items"  # b left no trace


async def test_missing_previous_response_is_404(make_gateway: GatewayFactory) -> None:
    async with make_gateway() as gw:
        with pytest.raises(openai.NotFoundError):
            await gw.client.responses.create(
                model="scripted", input="x", previous_response_id="resp_nope"
            )


async def test_continuing_without_the_tool_output_is_400(make_gateway: GatewayFactory) -> None:
    tool = {"type": "function", "name": "ping", "parameters": {"type": "object"}}
    async with make_gateway() as gw:
        first = await gw.client.responses.create(
            model="scripted",
            input=json.dumps({"script": [{"call": "ping"}]}),
            tools=[tool],  # type: ignore[list-item]
        )
        with pytest.raises(openai.BadRequestError) as err:
            await gw.client.responses.create(
                model="scripted", previous_response_id=first.id, input="no output given"
            )
        assert "No tool output found" in str(err.value)
