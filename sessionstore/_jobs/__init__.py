"""Whole-database jobs run beside the store: retention, key rotation and imports of the
Agents SDK's own tables."""
