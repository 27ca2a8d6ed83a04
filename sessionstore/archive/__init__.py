"""Archives: the originals a compaction replaced, or a truncated tool output's full text."""
