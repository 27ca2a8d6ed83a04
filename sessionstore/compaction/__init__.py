"""Context compaction: policies, summarizers, context hygiene and the compaction service."""
