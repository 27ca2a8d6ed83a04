"""Adapters: thin layers that put the kernel under an agent loop.

`chat` serves a plain loop over the `openai` client's Chat Completions messages (any
OpenAI-compatible server). The kernel (store, compaction, archives, events) knows no
agent framework; adapters import it, never the other way round.
"""
