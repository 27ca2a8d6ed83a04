"""Each tenant's conversations in its own store, chosen from the run context.

The Agents SDK hands a session the run's context (`wrapper`) on every call when all four of
its methods accept one, as `SQLSession`'s do. This session picks the tenant's store from it
and refuses a run that names no known tenant, so one tenant can never read another's history:
the same conversation id under two tenants is two conversations in two databases.

    python examples/tenant_routing.py                      # two SQLite files here
    python examples/tenant_routing.py URL_ACME URL_GLOBEX  # e.g. two PostgreSQL databases

Offline: the SDK's ScriptedModel answers (no API key needed).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents import Agent, RunContextWrapper, Runner, TResponseInputItem, set_tracing_disabled
from agents.memory import SessionSettings
from agents.testing import ScriptedModel, assistant_message

from sessionstore import SessionStore, text_of
from sessionstore.adapters.agents_sdk import SQLSession


@dataclass(frozen=True)
class Tenant:
    """The run context: whose request this is (set by your web layer after authentication)."""

    name: str


class TenantSession:
    """One conversation id, stored in the store of the tenant the run is for."""

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, stores: Mapping[str, SessionStore]) -> None:
        self.session_id = session_id
        self._stores = stores

    def _session(self, wrapper: RunContextWrapper[Any] | None) -> SQLSession:
        tenant = getattr(getattr(wrapper, "context", None), "name", None)
        store = self._stores.get(tenant) if isinstance(tenant, str) else None
        if store is None:  # no context, or a tenant with no store: refuse
            raise PermissionError(f"no store for tenant {tenant!r}: run with context=Tenant(...)")
        return SQLSession(self.session_id, store)

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        return await self._session(wrapper).get_items(limit, wrapper=wrapper)

    async def add_items(
        self, items: list[TResponseInputItem], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        await self._session(wrapper).add_items(items, wrapper=wrapper)

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        return await self._session(wrapper).pop_item(wrapper=wrapper)

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        await self._session(wrapper).clear_session(wrapper=wrapper)


async def main(acme_url: str, globex_url: str) -> None:
    set_tracing_disabled(True)
    stores = {
        tenant: SessionStore(url, create_tables=True)
        for tenant, url in (("acme", acme_url), ("globex", globex_url))
    }
    session = TenantSession("support-chat", stores)  # one id, two tenants
    for store in stores.values():
        await store.clear("support-chat")  # start over on each run of the example
    answers = [[assistant_message(f"Noted: {fact}.")] for fact in ("rockets", "anvils")]
    agent = Agent[Tenant](name="support", instructions="Be brief.", model=ScriptedModel(answers))
    for tenant, question in (("acme", "We sell rockets."), ("globex", "We sell anvils.")):
        await Runner.run(agent, question, session=session, context=Tenant(tenant))
    try:
        await Runner.run(agent, "Whose data is this?", session=session, context=Tenant("initech"))
    except PermissionError as refused:
        print(f"refused: {refused}")
    for tenant, store in stores.items():
        texts = [text_of(item) for item in await store.load_context("support-chat")]
        print(f"{tenant}: {' | '.join(texts)}")
        await store.close()


if __name__ == "__main__":
    urls = sys.argv[1:] or ["sqlite:///tenant_acme.db", "sqlite:///tenant_globex.db"]
    asyncio.run(main(*urls))
