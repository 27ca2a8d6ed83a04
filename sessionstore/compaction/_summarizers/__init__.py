"""The summarizers compaction can call: the offline extractive one and its parts, the
OpenAI-backed one, the provider's own compaction, and their shared prompts."""
