"""`store.failover_retry_s` in a configuration file reaches the store it builds."""

from __future__ import annotations

import pytest

from sessionstore import ConfigError
from sessionstore._builders import build_store
from sessionstore._config import SessionStoreConfig


async def test_the_config_setting_reaches_the_postgresql_store() -> None:
    config = SessionStoreConfig.model_validate(
        {"store": {"url": "postgresql+asyncpg://app@127.0.0.1/x", "failover_retry_s": 30}}
    )
    store = build_store(config, environ={})
    try:
        assert store.database.failover_retry_s == 30.0  # type: ignore[union-attr]
    finally:
        await store.close()


def test_a_negative_setting_is_refused() -> None:
    with pytest.raises((ConfigError, ValueError), match="failover_retry_s"):
        SessionStoreConfig.model_validate({"store": {"failover_retry_s": -1}})
