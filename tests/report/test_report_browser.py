"""The report in a real browser: headless Chromium (Debian's chromium and chromium-driver, which
.ci/run installs) opens the index, follows a link to a run page, finds the store's numbers in
its metric tables and its figures drawn, with no error on the console. The screenshots are kept
in test-artifacts/ (git-ignored) to look at."""

from __future__ import annotations

import shutil
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import REPO, SMALL_DUMBBELL

ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)
DRIVER = shutil.which("chromedriver")

pytestmark = [pytest.mark.engine, pytest.mark.slow]


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("no headless Chromium here (apt-get install chromium chromium-driver; .ci/run does)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1800", "--allow-file-access-from-files"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    from bufferlab.report import build_site
    from bufferlab.report.serve import make_server
    from bufferlab.runner import run
    from bufferlab.spec import Scenario

    root = tmp_path_factory.mktemp("browser")
    db = root / "store.duckdb"
    spec = root / "small.toml"
    spec.write_text(textwrap.dedent(SMALL_DUMBBELL), encoding="utf-8")
    run_id = run(Scenario.from_toml(spec).with_overrides({"duration": "3s"}), db).run_id
    run(Scenario.from_toml(spec).with_overrides({"name": "other", "topology.queue": "6p"}), db)
    build_site(db, root / "site")
    server = make_server(root / "site", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"db": db, "site": root / "site", "run_id": run_id, "url": f"http://127.0.0.1:{server.server_address[1]}/"}
    server.shutdown()
    server.server_close()


def _console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_index_to_run_page_shows_the_stores_numbers_and_drawn_figures(browser, served):
    import bufferlab
    from selenium.webdriver.common.by import By

    from bufferlab.report.tables import format_value

    browser.get(served["url"])
    assert "Results in" in browser.find_element(By.TAG_NAME, "h1").text
    # Search narrows the runs table to the matching run.
    browser.find_element(By.ID, "search").send_keys("other")
    visible = [r for r in browser.find_elements(By.CSS_SELECTOR, "table.runs tbody tr") if r.is_displayed()]
    assert len(visible) == 1 and "other" in visible[0].text
    browser.find_element(By.ID, "search").clear()
    browser.execute_script("document.getElementById('search').dispatchEvent(new Event('input'))")

    browser.find_element(By.LINK_TEXT, served["run_id"][:12]).click()
    assert served["run_id"] in browser.find_element(By.CSS_SELECTOR, "dl.facts").text

    res = bufferlab.load(served["db"])
    flows = res.table("flow_metrics", served["run_id"])
    net = res.table("network_metrics", served["run_id"])
    for table_id, frame, metric in (("flow-metrics", flows, "mean_throughput_l4"),
                                    ("flow-metrics", flows, "mean_srtt_l4"),
                                    ("network-metrics", net, "mean_jains_fairness_throughput_l4")):
        cells = browser.find_elements(By.CSS_SELECTOR, f"#{table_id} tr[data-metric='{metric}'] td.num")
        assert [c.text for c in cells] == [format_value(v) for v in frame[metric].to_list()], metric

    # cwnd, in flight, sRTT, throughput and the queue, drawn in the browser (no static figure).
    canvases = browser.find_elements(By.CSS_SELECTOR, "figure.chart canvas")
    assert len(canvases) == 5
    for canvas in canvases:
        assert canvas.size["width"] > 100 and canvas.size["height"] > 100
        inked = browser.execute_script(
            "const c = arguments[0], d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
            "let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n;", canvas)
        assert inked > 1000, "a chart drew nothing"
    # Hovering a chart shows the values at that time.
    from selenium.webdriver import ActionChains

    ActionChains(browser).move_to_element(canvases[0]).perform()
    tip = browser.find_element(By.CSS_SELECTOR, "figure.chart .chart-tip")
    assert tip.is_displayed() and "t = " in tip.text and "flow_0" in tip.text

    assert _console_errors(browser) == []
    ARTIFACTS.mkdir(exist_ok=True)
    browser.get_screenshot_as_file(str(ARTIFACTS / "report-run-figures.png"))
    browser.execute_script("window.scrollTo(0, 0)")
    browser.get_screenshot_as_file(str(ARTIFACTS / "report-run-page.png"))
    browser.get(served["url"])
    browser.get_screenshot_as_file(str(ARTIFACTS / "report-index.png"))
    assert (ARTIFACTS / "report-run-page.png").stat().st_size > 10_000


def test_the_report_works_from_file_urls_without_a_server(browser, served):
    from selenium.webdriver.common.by import By

    page = served["site"] / "runs" / served["run_id"][:16] / "index.html"
    browser.get(Path(page).resolve().as_uri())
    assert len(browser.find_elements(By.CSS_SELECTOR, "figure.chart canvas")) == 5
    assert browser.execute_script("return getComputedStyle(document.body).fontSize") == "14px"  # CSS loaded
    assert _console_errors(browser) == []
