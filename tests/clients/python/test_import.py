"""`import hitl_client` imports none of its libraries (httpx, pydantic) nor its own modules:
each name is imported on first use, so a program that imports the client but does not use it
pays nothing (bench/client_import.py measures it). Every public name still resolves."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hitl_client

pytestmark = pytest.mark.subprocess

HEAVY = ("httpx", "pydantic", "hitl_client.")


def modules_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after running `code`."""
    probe = f"{code}; import sys; print(*sorted(m for m in sys.modules if m.startswith({HEAVY})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, env={"PYTHONPATH": ":".join(sys.path)})  # fmt: skip
    return done.stdout.split()


def test_importing_the_client_imports_none_of_its_libraries() -> None:
    assert modules_after("import hitl_client") == []


def test_a_name_used_imports_what_it_needs() -> None:
    held = modules_after("from hitl_client import verify_webhook")
    assert "hitl_client.webhooks" in held
    assert "hitl_client.sync_client" not in held


def test_the_models_validators_are_built_on_first_use_not_at_import() -> None:
    """Building them is most of what the client's import cost beyond pydantic's own."""
    probe = ("from hitl_client import RequestInfo, RequestApprovalAnswer, models; "
             "built = [m.__name__ for m in (RequestInfo, *vars(models).values()) "
             "if getattr(m, '__pydantic_complete__', False)]; "
             "read = RequestInfo.model_validate({'id': 'r1', 'status': 'pending', 'to': 'x'}); "
             "print(built, read.id, RequestInfo.__pydantic_complete__)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, env={"PYTHONPATH": ":".join(sys.path)})  # fmt: skip
    assert done.stdout == "[] r1 True\n"


@pytest.mark.parametrize("name", hitl_client.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(hitl_client, name) is not None
    assert name in dir(hitl_client)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        hitl_client.Nope  # noqa: B018
