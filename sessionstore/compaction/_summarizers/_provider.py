"""A summarizer whose summary is the provider's own opaque compaction item.

OpenAI Responses compacts server-side (`POST /responses/compact`): it answers with the
user messages it kept and one `compaction` item whose encrypted content only the same
provider and model can read. That item becomes the session's marker, stored verbatim. The
user messages it echoes are not stored again: the compaction's recent layers keep the user
messages the policy keeps, the rest are what the item stands for (as with our summaries).

The previous marker is sent first when it is such an item (the API's way to update the
state instead of summarizing a summary); a readable prior summary is sent as a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import openai
from openai.types.responses import CompactedResponse

from ..._errors import SummarizerError
from ..._opaque import DEFAULT_PROVIDER, describe_opaque, normalize_provider
from ._openai import OpenAISummarizer
from ._summarizer import SummaryRequest, SummaryResult

__all__ = ["ProviderSummarizer"]

# The private key sessionstore keeps on items (`meta`): never sent to a provider.
_PRIVATE_KEYS = frozenset({"meta"})


def _sendable(item: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in item.items() if key not in _PRIVATE_KEYS}


class ProviderSummarizer(OpenAISummarizer):
    """Compaction by an OpenAI-compatible `/responses/compact` endpoint (opaque items).

    `provider` names who can read the items (stored in `compactions.provider`, lower case:
    'OpenAI' is 'openai'); the client, timeout and error mapping are the OpenAI summarizer's.
    """

    def __init__(
        self,
        model: str,
        *,
        provider: str = DEFAULT_PROVIDER,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        input_window: int | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        provider = normalize_provider(provider)  # ValueError naming what is allowed
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            api="responses",
            input_window=input_window,
            client=client,
        )
        self.provider = provider
        self.name = f"provider:{provider}:{model}"

    def can_read(self, provider: str | None, model: str | None) -> bool:
        """Whether an item bound to `provider`/`model` can be sent back to this endpoint."""
        return (provider or "").lower() == self.provider and model == self.model

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """One `/responses/compact` call; every failure becomes a SummarizerError subclass."""
        try:
            compacted = await self._client.responses.compact(
                model=self.model, input=self._input(request)
            )
        except openai.OpenAIError as exc:
            raise self._translate(exc) from None  # the cause carries the request: keep it out
        return self._from_compacted(compacted)

    def _input(self, request: SummaryRequest) -> Any:
        items: list[dict[str, Any]] = []
        if request.prior_item is not None:
            items.append(_sendable(request.prior_item))
        elif request.prior_summary:
            items.append({"role": "assistant", "content": request.prior_summary})
        items.extend(_sendable(item) for item in request.items)
        return items

    def _from_compacted(self, compacted: CompactedResponse) -> SummaryResult:
        found = [item for item in compacted.output if item.type == "compaction"]
        if not found:
            raise SummarizerError(f"{self.name} returned no compaction item")
        # Verbatim: the fields the provider sent, nothing the client defaults added.
        item = found[-1].model_dump(mode="json", exclude_unset=True, warnings=False)
        if not isinstance(item.get("encrypted_content"), str) or not item["encrypted_content"]:
            raise SummarizerError(f"{self.name} returned a compaction item without content")
        usage = compacted.usage
        return SummaryResult(
            text=describe_opaque(item, provider=self.provider, model=self.model),
            model=self.model,
            output_tokens=usage.output_tokens if usage else None,
            item=item,
            provider=self.provider,
        )
