"""The API's page in a real browser: /docs (Swagger UI) renders the API from the files `paperscope serve` ships,
and every request the browser makes while drawing it goes to this server (offline, it would be blank if a single
file came from a CDN)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.served import Served
from tests.web import test_page as page
from tests.web.test_page import wait

browser = page.browser  # the same headless Chromium fixture as the page's tests

# Every resource the document loaded, by URL (scripts, styles, the OpenAPI document, images, fonts).
RESOURCES = "return performance.getEntriesByType('resource').map(e => e.name)"


@pytest.mark.parametrize(
    ("path", "rendered"),
    [
        ("/docs", ".swagger-ui .info .title"),  # Swagger UI's title block, drawn from /openapi.json
    ],
)
def test_the_api_docs_render_from_this_server_alone(
    browser: WebDriver, server: Served, path: str, rendered: str
) -> None:
    browser.get(server.url + path)
    wait(
        browser,
        lambda d: any("paperscope" in e.text for e in d.find_elements(By.CSS_SELECTOR, rendered)),
        f"{path} drawing the API's title",
    )
    # The routes are listed: the pages read the API, not only their own shell.
    wait(browser, lambda d: "/v1/documents" in d.find_element(By.TAG_NAME, "body").text, f"{path} listing the routes")
    loaded = browser.execute_script(RESOURCES)
    own = urlsplit(server.url).netloc
    assert loaded, f"{path} loaded no resource"
    elsewhere = [url for url in loaded if urlsplit(url).scheme in ("http", "https") and urlsplit(url).netloc != own]
    assert elsewhere == [], f"{path} loaded from other hosts: {elsewhere}"
    assert any(url.endswith("/openapi.json") for url in loaded)
