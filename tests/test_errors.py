"""One exception tree: every public exception sessionstore defines is a SessionStoreError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import sessionstore
from sessionstore._errors import SessionStoreError, StoreUnavailableError


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(sessionstore.__path__, "sessionstore."):
        if module_info.name.endswith("__main__"):  # importing it runs the CLI
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = value
    return found


def test_every_public_exception_is_under_sessionstore_error() -> None:
    classes = _exception_classes()
    assert len(classes) >= 20  # the walk really found the tree
    outside = sorted(
        name for name, cls in classes.items() if not issubclass(cls, SessionStoreError)
    )
    assert outside == []


def test_the_tree_in_the_errors_docstring_names_every_exception() -> None:
    drawn = sessionstore._errors.__doc__ or ""
    missing = sorted(
        cls.__name__ for cls in _exception_classes().values() if cls.__name__ not in drawn
    )
    assert missing == []


def test_error_texts_are_redacted_as_they_are_made() -> None:
    error = StoreUnavailableError(
        "lost postgresql://app:hunter2-pass@db/x", outcome_known=False, token="t"
    )
    assert "hunter2-pass" not in str(error) and "hunter2-pass" not in repr(error)
    assert (error.outcome_known, error.token) == (False, "t")


def test_every_exception_lives_in_one_module_and_is_exported_from_the_package() -> None:
    classes = _exception_classes()
    elsewhere = sorted(
        name for name, cls in classes.items() if cls.__module__ != "sessionstore._errors"
    )
    assert elsewhere == []
    assert sorted(cls.__name__ for cls in classes.values()) == sorted(
        name for name in sessionstore.__all__ if name in {c.__name__ for c in classes.values()}
    )
