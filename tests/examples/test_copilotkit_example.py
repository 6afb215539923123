"""examples/copilotkit in a real browser: the README's `npm start` (the page's bundle built, its
`server.mjs` proxying `/ag-ui` with the token) in front of the real service (`Server.start`,
as `hitl-bridge serve` runs it) whose model is the fake Anthropic API, scripted to call the
human tools; Debian's headless chromium, driven by Selenium as the admin console's tests drive
it, types the message, sees each tool's card wait for the person, answers, and reads on.

Screenshots go to $HITL_TEST_ARTIFACTS/copilotkit (else the test's tmp_path), printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import pytest
from selenium.common.exceptions import NoAlertPresentException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from bot.doors.tokens import PREFIX, Tokens
from bot.store.doors import DoorTables
from tests.adapters.doors.admin.test_console_browser import browser, chromium
from tests.adapters.surfaces.slack.conftest import Env, StartEnv, start_env
from tests.clients.typescript.node import npm_ready
from tests.examples.readme import ROOT, port_of, serve_port, told
from tests.fakes.anthropic_api import reply, reply_text, text_block, tool_use_block

__all__ = ["browser", "chromium", "start_env"]  # the fixtures these tests use

pytestmark = pytest.mark.subprocess

EXAMPLE = ROOT / "examples" / "copilotkit"
ARTIFACTS = os.environ.get("HITL_TEST_ARTIFACTS")  # read at import: start_env clears HITL_*
WAIT = 15.0  # seconds for anything the page waits on; only a broken test waits that long
SHOWN = "<img src=x onerror=alert(1)>"  # in the arguments: shown as text, never run
APPROVAL = {"action": f"Deploy v2 to production {SHOWN}", "reason": "Release day"}
QUESTION = {"question": "Which region?"}
REGION = "eu-west-1"
T = TypeVar("T")


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(ARTIFACTS) / "copilotkit" if ARTIFACTS else tmp_path / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"copilotkit example screenshots in {folder}")
    return folder


@contextlib.asynccontextmanager
async def page_served(env: Env) -> AsyncIterator[str]:
    """The README's run command, pointed at the service with a token of its own; the page's
    address. Its process group is ended after the test (npm starts node under a shell)."""
    readme = told("copilotkit")
    assert readme.install == ["npm", "ci", "--prefix", "examples/copilotkit"]
    assert set(readme.env) == {"HITL_URL", "HITL_TOKEN"}
    assert port_of(readme.env["HITL_URL"]) == serve_port()
    npm_ready(EXAMPLE)
    token, _ = await Tokens(DoorTables(env.server.service.store)).create("copilotkit")
    served = {"HITL_URL": env.server.url, "HITL_TOKEN": token, "PORT": "0"}
    # One test at a time: its build rewrites dist/app.js, which a test beside it (another
    # pytest-xdist worker) would be serving half-written.
    with (EXAMPLE / "node_modules" / ".tests.lock").open("w") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        process = await asyncio.create_subprocess_exec(
            *readme.run, cwd=ROOT, env={**os.environ, **served}, start_new_session=True,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:
            yield await asyncio.wait_for(_address(process), WAIT * 4)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            await process.wait()


async def _address(process: asyncio.subprocess.Process) -> str:
    """The address server.mjs prints once it listens (what npm printed before it, on failure)."""
    assert process.stdout is not None
    printed = []
    while line := (await process.stdout.readline()).decode():
        printed.append(line)
        if line.startswith("listening on "):
            return line.split()[2]
    raise AssertionError("the page's server did not start:\n" + "".join(printed))


def until(driver: WebDriver, found: Callable[[WebDriver], T], errors: int = 0) -> T:
    """Wait for `found` to hold; an error the page shows beyond the `errors` expected fails at
    once, with its words."""

    def check(d: WebDriver) -> T:
        shown = [e.text for e in d.find_elements(By.CSS_SELECTOR, ".message.error")]
        assert len(shown) <= errors, shown
        return found(d)

    try:
        return WebDriverWait(driver, WAIT).until(check)
    except TimeoutException:
        shown = driver.find_element(By.ID, "log").text
        raise AssertionError(f"waited {WAIT} s in vain; the page shows:\n{shown}") from None


def card(driver: WebDriver, tool: str, status: str, errors: int = 0) -> WebElement:
    selector = f'.tool-card[data-tool="{tool}"][data-status="{status}"]:not([data-sent])'
    return until(driver, lambda d: d.find_element(By.CSS_SELECTOR, selector), errors)


def said(driver: WebDriver, text: str) -> bool:
    found = driver.find_elements(By.CSS_SELECTOR, ".message.assistant")
    return any(element.text == text for element in found)


def send(driver: WebDriver, text: str) -> None:
    box = until(driver, lambda d: d.find_element(By.ID, "message"))
    box.send_keys(text)
    driver.find_element(By.ID, "send").click()


def in_card(element: WebElement, selector: str) -> WebElement:
    return element.find_element(By.CSS_SELECTOR, selector)


def no_alert(driver: WebDriver) -> bool:
    try:
        shown = driver.switch_to.alert.text
    except NoAlertPresentException:
        return True
    raise AssertionError(f"an alert ran: {shown}")


def answer_and_approve(driver: WebDriver, url: str, shots: Path) -> float:
    """Ask, answer the question, approve the deploy; the seconds from the message sent to the
    agent's last words shown."""
    driver.get(url)
    started = time.monotonic()
    send(driver, "deploy v2, ask me first")
    question = card(driver, "AskUserQuestion", "executing")
    assert in_card(question, ".status").text == "executing"
    in_card(question, "textarea.answer").send_keys(REGION)
    in_card(question, "button.send-answer").click()
    done = card(driver, "AskUserQuestion", "complete")
    assert in_card(done, ".result").text == f"Answered: {REGION}"
    approval = card(driver, "requestApproval", "executing")
    assert APPROVAL["action"] in approval.text and "Release day" in approval.text
    assert no_alert(driver) and not driver.find_elements(By.CSS_SELECTOR, "#log img")
    driver.save_screenshot(str(shots / "1-executing.png"))
    in_card(approval, "button.approve").click()
    approved = card(driver, "requestApproval", "complete")
    assert in_card(approved, ".result").text == "✓ Approved"
    assert APPROVAL["action"] in approved.text  # what was approved stays on the card
    until(driver, lambda d: said(d, "Deployed."))
    elapsed = time.monotonic() - started
    driver.save_screenshot(str(shots / "2-complete.png"))
    return elapsed


def decline(driver: WebDriver, url: str, shots: Path) -> None:
    driver.get(url)
    send(driver, "deploy v2")
    approval = card(driver, "requestApproval", "executing")
    in_card(approval, "input.decline-reason").send_keys("not on Friday")
    in_card(approval, "button.decline").click()
    declined = card(driver, "requestApproval", "complete")
    assert in_card(declined, ".result").text == "✗ Declined — Rejected: not on Friday"
    assert "declined" in (declined.get_attribute("class") or "")
    until(driver, lambda d: said(d, "Understood, not deploying."))
    driver.save_screenshot(str(shots / "3-declined.png"))


async def test_the_page_asks_waits_for_the_person_and_goes_on_once_approved(
    browser: WebDriver, start_env: StartEnv, shots: Path
) -> None:
    env = await start_env()
    env.model.script(
        reply(text_block("Which region first."),
              tool_use_block("AskUserQuestion", QUESTION, id="toolu_region")),
        reply(tool_use_block("requestApproval", APPROVAL, id="toolu_deploy")),
        reply_text("Deployed."),
    )  # fmt: skip
    async with page_served(env) as url:
        elapsed = await asyncio.to_thread(answer_and_approve, browser, url, shots)
    print(f"message → question → answer → approval → approve → words: {elapsed:.2f} s")
    assert env.tool_result(2)["content"] == f'{{"answer":"{REGION}"}}'
    assert env.tool_result(3)["content"] == '{"approved":true}'


async def test_a_decline_with_a_reason_is_the_tools_result(
    browser: WebDriver, start_env: StartEnv, shots: Path
) -> None:
    env = await start_env()
    env.model.script(
        reply(tool_use_block("requestApproval", APPROVAL, id="toolu_deploy")),
        reply_text("Understood, not deploying."),
    )
    async with page_served(env) as url:
        await asyncio.to_thread(decline, browser, url, shots)
    result = env.tool_result(2)
    assert result.get("is_error") is True and "Rejected: not on Friday" in result["content"]


FORM = {"fields": [{"name": "email", "label": "Email", "type": "email"},
                   {"name": "age", "label": "Age", "type": "integer"}]}  # fmt: skip


def fill_the_form(driver: WebDriver, url: str, shots: Path) -> None:
    """Submitted empty, the form is refused and opens again; filled in, it is the answer."""
    driver.get(url)
    send(driver, "sign me up")
    form = card(driver, "collectUserData", "executing")
    in_card(form, "button.submit").click()
    refused = until(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".message.error"), 1)
    assert "was refused" in refused.text and "email" in refused.text
    form = card(driver, "collectUserData", "executing", 1)
    in_card(form, 'input[name="email"]').send_keys("ada@example.com")
    in_card(form, 'input[name="age"]').send_keys("36")
    driver.save_screenshot(str(shots / "4-form.png"))
    in_card(form, "button.submit").click()
    done = card(driver, "collectUserData", "complete", 1)
    assert in_card(done, ".result").text == '{"email":"ada@example.com","age":36}'
    until(driver, lambda d: said(d, "Thanks."), 1)


async def test_a_refused_form_opens_again_and_its_answer_goes_through(
    browser: WebDriver, start_env: StartEnv, shots: Path
) -> None:
    env = await start_env()
    env.model.script(
        reply(tool_use_block("collectUserData", FORM, id="toolu_form")), reply_text("Thanks.")
    )
    async with page_served(env) as url:
        await asyncio.to_thread(fill_the_form, browser, url, shots)
    assert env.tool_result(2)["content"] == '{"email":"ada@example.com","age":36}'


async def test_the_proxy_adds_the_token_and_streams_each_event_as_it_comes(
    start_env: StartEnv,
) -> None:
    """No token from the page, yet the run is the token's; RUN_STARTED reaches the page while
    the model has not answered yet (the stream is piped, not collected); the page and its
    bundle carry no token."""
    env = await start_env()
    answer = asyncio.Event()
    env.model.script(reply_text("Hello.", hold=answer))
    run = {"threadId": "t1", "runId": "r1",
           "messages": [{"id": "m1", "role": "user", "content": "hi"}]}  # fmt: skip
    async with page_served(env) as url:
        async with env.http.post(f"{url}ag-ui", json=run) as response:
            assert (response.status, response.content_type) == (200, "text/event-stream")
            first = await asyncio.wait_for(response.content.readuntil(b"\n\n"), WAIT)
            assert b'"RUN_STARTED"' in first and not answer.is_set()
            answer.set()
            rest = await response.text()
        page = [await (await env.http.get(f"{url}{path}")).text() for path in ("", "app.js")]
    assert '"delta":"Hello."' in rest and '"RUN_FINISHED"' in rest
    tokens = await Tokens(DoorTables(env.server.service.store)).list()
    assert [t.name for t in tokens] == ["copilotkit"]
    assert all(PREFIX not in text for text in page)
