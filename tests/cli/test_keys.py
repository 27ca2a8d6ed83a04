"""`sessionstore keys generate|status|rotate|retire`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore._security._crypto import Keyring
from sessionstore.compaction import CompactionConfig, CompactionManager
from tests.support.cli import NO_KEYS, assert_refused, db_state, run


def _generate(key_file: Path, key_id: str) -> None:
    result = run("keys", "generate", key_id, "--key-file", str(key_file))
    assert result.exit_code == 0, result.output


def _seal_one_archive(url: str, key_file: Path) -> None:
    """Session 's', compacted once under the key file's active key; it says a secret."""

    async def seed() -> None:
        async with SessionStore(url, keyring=Keyring.from_file(key_file)) as store:
            manager = CompactionManager(CompactionConfig(store=store))
            items = []
            for n in range(10):
                items += [
                    {"role": "user", "content": f"turn {n}"},
                    {
                        "role": "assistant",
                        "content": f"saved token=tok_{n}_SECRETVALUE for turn {n}",
                    },
                ]
            await manager.append("s", items)
            await manager.compact("s")

    asyncio.run(seed())


def test_keys_generate_rotate_retire_and_archive_show(db_url: str, tmp_path: Path) -> None:
    key_file = tmp_path / "keys.json"
    _generate(key_file, "k1")
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    _seal_one_archive(db_url, key_file)
    env = {"SESSIONSTORE_KEY_FILE": str(key_file)}
    status = json.loads(run("keys", "status", "--url", db_url, "--json", env=env).stdout)
    # One sealed archive, and the key of the session's history chain.
    assert status["active"] == "k1" and status["keys"][0]["uses"] == 2
    shown = run("archive", "show", "s", "--url", db_url, "--json", env=env)
    assert (
        shown.exit_code == 0 and "SECRETVALUE" not in shown.output and "<REDACTED>" in shown.output
    )
    busy = run("keys", "retire", "k1", "--url", db_url, env=env)
    assert busy.exit_code == 2 and "still protects 2 archive(s) or session key(s)" in busy.output
    _generate(key_file, "k2")
    rotated = json.loads(run("keys", "rotate", "--url", db_url, "--json", env=env).stdout)
    assert rotated == {"active": "k2", "rewrapped": 2, "usage": {"k2": 2}}
    retired = run("keys", "retire", "k1", "--url", db_url, "--key-file", str(key_file), env=env)
    assert retired.exit_code == 0, retired.output
    assert Keyring.from_file(key_file).ids == ("k2",)
    again = run("archive", "show", "s", "--url", db_url, "--json", env=env)
    assert again.exit_code == 0 and again.output.count('"archive_id"') >= 1


def test_generate_needs_a_key_file() -> None:
    assert_refused(
        run("keys", "generate", "k1", env=NO_KEYS),
        2,
        "give --key-file or set SESSIONSTORE_KEY_FILE",
    )


def test_generate_refuses_an_existing_id_and_keeps_the_file(tmp_path: Path) -> None:
    key_file = tmp_path / "keys.json"
    _generate(key_file, "k1")
    before = key_file.read_bytes()
    result = run("keys", "generate", "k1", "--key-file", str(key_file))
    assert_refused(result, 2, "key 'k1' already exists in")
    assert key_file.read_bytes() == before


def test_generate_to_an_unwritable_path_says_so(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "plain-file"
    not_a_directory.write_text("x")
    target = not_a_directory / "keys.json"
    result = run("keys", "generate", "k1", "--key-file", str(target))
    assert_refused(result, 2, "--key-file", "cannot write", "Not a directory")
    assert not_a_directory.read_text() == "x"


def test_generate_refuses_an_invalid_key_id(tmp_path: Path) -> None:
    key_file = tmp_path / "keys.json"
    assert_refused(
        run("keys", "generate", "no spaces!", "--key-file", str(key_file)), 2, "invalid key id"
    )
    assert not key_file.exists()


def test_status_without_a_keyring_is_json(seeded: str) -> None:
    result = run("keys", "status", "--url", seeded, "--json", env=NO_KEYS)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"active": None, "keys": []}


def test_status_reads_the_config_files_key_file(
    seeded: str, tmp_path: Path, write_config: Callable[..., Path]
) -> None:
    key_file = tmp_path / "keys.json"
    _generate(key_file, "k1")
    config = write_config(seeded, keys={"key_file": str(key_file)})
    result = run("keys", "status", "--config", str(config), "--json", env=NO_KEYS)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["active"] == "k1"


def test_rotate_without_a_keyring_is_refused(seeded: str) -> None:
    before = db_state(seeded)
    result = run("keys", "rotate", "--url", seeded, env=NO_KEYS)
    assert_refused(result, 2, "no keyring configured", "SESSIONSTORE_KEYS")
    assert db_state(seeded) == before


@pytest.mark.parametrize("size", ["0", "many"])
def test_rotate_refuses_a_bad_batch_size(seeded: str, size: str) -> None:
    assert_refused(run("keys", "rotate", "--url", seeded, "--batch-size", size), 2, "--batch-size")


def test_retire_an_unknown_key_without_a_keyring(seeded: str) -> None:
    before = db_state(seeded)
    result = run("keys", "retire", "ghost", "--url", seeded, env=NO_KEYS)
    assert_refused(result, 2, "unknown key 'ghost'", "no keyring is configured")
    assert db_state(seeded) == before


def test_retire_an_unknown_key_leaves_the_key_file_alone(seeded: str, tmp_path: Path) -> None:
    key_file = tmp_path / "keys.json"
    _generate(key_file, "k1")
    before = key_file.read_bytes()
    result = run("keys", "retire", "ghost", "--url", seeded, "--key-file", str(key_file))
    assert_refused(result, 2, "unknown key 'ghost'", "(keys: k1)")
    assert key_file.read_bytes() == before


def test_retire_refuses_the_active_key(seeded: str, tmp_path: Path) -> None:
    key_file = tmp_path / "keys.json"
    _generate(key_file, "k1")
    result = run("keys", "retire", "k1", "--url", seeded, "--key-file", str(key_file))
    assert_refused(result, 2, "'k1' is the active key; activate another one first")
    assert Keyring.from_file(key_file).ids == ("k1",)


def test_retire_with_a_missing_key_file(seeded: str, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    result = run("keys", "retire", "k1", "--url", seeded, "--key-file", str(missing))
    assert_refused(result, 2, "cannot read it (No such file or directory)")
