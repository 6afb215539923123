"""The admin console in a real browser: Debian's headless chromium driven by Selenium through
Debian's chromedriver (`make browser` installs both; nothing is downloaded by the test tools),
against the console of the real service (`Server.start`, as `hitl-bridge serve` runs it).

Without chromium these tests skip, saying so, unless HITL_CONFORMANCE_DIR is set (CI): there a
missing browser fails them. Screenshots go to $HITL_TEST_ARTIFACTS/admin-console (else the
test's tmp_path), printed.
"""

from __future__ import annotations

import asyncio
import csv
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import Select, WebDriverWait

from adapters.doors.admin.app import AdminConsole
from bot.bridge.people import PeopleNames
from tests.adapters.doors.admin.conftest import BOBBY, ENV_TOKEN, SCRIPT, ask_as_in_production, fill
from tests.adapters.surfaces.slack.conftest import StartEnv
from tests.conformance import expected

# Read at import: the service's fixture clears HITL_* from the environment.
BROWSER_EXPECTED = expected()
ARTIFACTS = os.environ.get("HITL_TEST_ARTIFACTS")
WAIT = 10.0  # seconds for a download to land; only a broken test waits that long


@pytest.fixture
def chromium() -> tuple[str, str]:
    """The paths of chromium and chromedriver; skip or fail (CI) without them."""
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver is None:
        reason = "Debian's chromium and chromium-driver are not installed (run `make browser`)"
        if BROWSER_EXPECTED:
            pytest.fail(f"{reason}; HITL_CONFORMANCE_DIR is set, so they are expected")
        pytest.skip(reason)
    return browser, driver


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    folder = Path(ARTIFACTS) / "admin-console" if ARTIFACTS else tmp_path / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"admin console screenshots in {folder}")
    return folder


@pytest.fixture
def browser(
    chromium: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WebDriver]:
    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager: never fetch a driver
    options = webdriver.ChromeOptions()
    options.binary_location = chromium[0]
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1280,1100", "--disable-gpu"):  # fmt: skip
        options.add_argument(argument)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads)})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=chromium[1]))
    driver.execute_cdp_cmd(
        "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    try:
        yield driver
    finally:
        driver.quit()


def follow(driver: WebDriver, by: str, value: str) -> None:
    """Click what leads to another page, and wait for that page to replace this one."""
    page = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(by, value).click()
    WebDriverWait(driver, WAIT).until(staleness_of(page))


def texts(driver: WebDriver, selector: str) -> list[str]:
    return [element.text for element in driver.find_elements(By.CSS_SELECTOR, selector)]


def no_alert(driver: WebDriver) -> bool:
    try:
        shown = driver.switch_to.alert.text
    except NoAlertPresentException:
        return True
    raise AssertionError(f"an alert ran: {shown}")


def waited(found: Callable[[], Path | None]) -> Path:
    deadline = time.monotonic() + WAIT
    while (path := found()) is None:
        assert time.monotonic() < deadline, "the download did not land"
        time.sleep(0.1)
    return path


def sign_in_and_browse(driver: WebDriver, url: str, shots: Path, downloads: Path) -> None:
    """What an admin does (synchronous: Selenium blocks; the service runs in the test's loop)."""
    driver.get(f"{url}/admin/")
    assert driver.current_url.endswith("/admin/signin")
    driver.save_screenshot(str(shots / "1-signin.png"))
    driver.find_element(By.ID, "token").send_keys("not-the-token")
    follow(driver, By.ID, "signin")
    assert "does not sign in here" in driver.find_element(By.ID, "error").text
    driver.find_element(By.ID, "token").send_keys(ENV_TOKEN)
    follow(driver, By.ID, "signin")
    assert driver.find_element(By.ID, "holder").text == "HITL_ADMIN_TOKEN"

    # The overview: the chain's status, and both charts drawn (points per day, bars per tool).
    assert "chain verification: intact" in driver.find_element(By.ID, "chain").text
    medians = driver.find_elements(By.CSS_SELECTOR, "svg.decision-times circle.point.median")
    p95s = driver.find_elements(By.CSS_SELECTOR, "svg.decision-times circle.point.p95")
    assert len(medians) == len(p95s) == 3  # three days with decisions
    bars = driver.find_elements(By.CSS_SELECTOR, "svg.outcomes g.bar")
    assert [bar.get_attribute("data-tool") for bar in bars] == [
        "approve_deploy", "ask_human", "run_command",
    ]  # fmt: skip
    segments = [len(bar.find_elements(By.CSS_SELECTOR, "rect.segment")) for bar in bars]
    assert segments == [2, 3, 1]  # answered+declined; answered+expired+pending; declined
    assert all(bar.size["width"] > 0 for bar in bars)
    driver.save_screenshot(str(shots / "2-overview.png"))

    # The table, filtered by text and then by outcome.
    follow(driver, By.LINK_TEXT, "Requests")
    assert driver.find_element(By.ID, "total").text == "7 requests"
    assert SCRIPT in texts(driver, "td.arguments")[0]  # shown as text, never run
    assert no_alert(driver) and not driver.find_elements(By.TAG_NAME, "script")
    driver.find_element(By.NAME, "text").send_keys("deploy")
    follow(driver, By.ID, "filter")
    assert texts(driver, "a.request-link") == ["r3", "r1", "r0"]
    Select(driver.find_element(By.NAME, "status")).select_by_visible_text("declined")
    follow(driver, By.ID, "filter")
    assert texts(driver, "a.request-link") == ["r1"]
    driver.save_screenshot(str(shots / "3-filtered.png"))

    # The CSV of the filtered table, downloaded by the browser.
    driver.find_element(By.ID, "csv").click()
    exported = waited(lambda: next(iter(downloads.glob("*.csv")), None))
    with exported.open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert [(row["id"], row["outcome"], row["tool"]) for row in rows] == [
        ("r1", "declined", "approve_deploy"),
    ]  # fmt: skip

    # The timeline of the request whose arguments hold a <script>.
    driver.find_element(By.NAME, "text").clear()
    Select(driver.find_element(By.NAME, "status")).select_by_visible_text("any outcome")
    follow(driver, By.ID, "filter")
    follow(driver, By.LINK_TEXT, "r-script")
    assert SCRIPT in driver.find_element(By.ID, "arguments").text
    assert no_alert(driver) and not driver.find_elements(By.TAG_NAME, "script")
    events = [row.find_elements(By.TAG_NAME, "td")[2].text
              for row in driver.find_elements(By.CSS_SELECTOR, "#timeline tr.event")]  # fmt: skip
    assert events == ["request.created", "request.rejected"]
    driver.save_screenshot(str(shots / "4-timeline.png"))


async def test_an_admin_signs_in_filters_exports_and_reads_a_timeline(
    browser: WebDriver, start_env: StartEnv, artifacts: Path, tmp_path: Path
) -> None:
    env = await start_env(HITL_ADMIN_TOKEN=ENV_TOKEN)
    await fill(env.server.service.store)
    await asyncio.to_thread(
        sign_in_and_browse, browser, env.server.url, artifacts, tmp_path / "downloads"
    )
    shots = await asyncio.to_thread(lambda: {p.name for p in artifacts.glob("*.png")})
    assert shots >= {"1-signin.png", "2-overview.png", "3-filtered.png", "4-timeline.png"}


WIDTHS = (360, 1400, 1920)  # a phone, a laptop, a wide screen (CSS pixels)
LINES = """const range = document.createRange(); range.selectNodeContents(arguments[0]);
return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;"""


def lines_of(driver: WebDriver, selector: str) -> list[int]:
    """How many lines each element's text takes (its line boxes' distinct tops)."""
    found = driver.find_elements(By.CSS_SELECTOR, selector)
    assert found, selector
    return [int(driver.execute_script(LINES, element)) for element in found]


def assert_layout_holds(driver: WebDriver, width: int) -> None:
    """The page fits its viewport: no sideways scroll of the page, the sign-out button in
    view, every date and time on one line."""
    inner = int(driver.execute_script("return window.innerWidth"))
    assert inner == width
    page = driver.execute_script(
        "const html = document.documentElement; return [html.scrollWidth, html.clientWidth]"
    )
    assert page[0] <= page[1], f"the page is {page[0]} px wide in {page[1]} px at {width} px"
    box = driver.execute_script(
        "return document.querySelector('header form button').getBoundingClientRect().toJSON()"
    )
    assert box["left"] >= 0 and box["right"] <= width and box["bottom"] <= 200, (width, box)
    assert max(lines_of(driver, ".when")) == 1, width  # 0: an empty cell (not settled yet)


def browse_at_every_width(driver: WebDriver, url: str, shots: Path, agent: str) -> None:
    driver.get(f"{url}/admin/signin")
    driver.find_element(By.ID, "token").send_keys(ENV_TOKEN)
    follow(driver, By.ID, "signin")
    for width in WIDTHS:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False,
        })  # fmt: skip
        driver.get(f"{url}/admin/requests")
        assert driver.find_element(By.ID, "total").text == "3 requests"
        bobby = driver.find_element(By.CSS_SELECTOR, "td.asked-by .person")
        assert (bobby.text, bobby.get_attribute("title")) == ("bobby", BOBBY)  # id on hover
        assert_layout_holds(driver, width)
        driver.save_screenshot(str(shots / f"5-requests-{width}.png"))
        driver.get(f"{url}/admin/requests/{agent}")
        assert_layout_holds(driver, width)
        driver.save_screenshot(str(shots / f"6-request-{width}.png"))


async def test_the_layout_holds_from_360_to_1920_px(
    browser: WebDriver, start_env: StartEnv, artifacts: Path
) -> None:
    env = await start_env(HITL_ADMIN_TOKEN=ENV_TOKEN)
    console = env.server.service.admin
    assert isinstance(console, AdminConsole) and isinstance(console.people, PeopleNames)
    console.people.wait = WAIT
    asked = await ask_as_in_production(env)
    await asyncio.to_thread(browse_at_every_width, browser, env.server.url, artifacts,
                            asked.by_agent)  # fmt: skip
