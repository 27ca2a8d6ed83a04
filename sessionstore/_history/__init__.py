"""Reading a session's history: turns, branches, time travel, search, agents, model
calls and the chain's verification. Above storage, below the store's facade."""
