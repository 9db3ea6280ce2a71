"""The web page in a real browser: Debian's headless Chromium driven by Selenium, against a real `paperscope serve`
(the session's server: an API key, no language model, so answers are extracted sentences).

Ask, see the streamed answer name the paper, click [1], see the page with the chunk highlighted, turn the page,
read the trace, ask a follow-up, open a `/?q=` link; text from papers and questions shown as text. A screenshot is
saved under the test's tmp dir, and also to $PAPERSCOPE_SCREENSHOT when set (the README's docs/screenshot.png).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import bibtexparser
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from paperscope.rag.embeddings import CachedEmbedder
from tests.served import KEY, PRELOADED, Served, make_home, serve, upload, wait_job
from tests.service.test_page_images import pixels

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
WAIT = 120  # seconds: an answer on a busy 2-core machine
QUESTION = "How many queries was FlashRank trained on?"


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """One headless Chromium for the module (Debian's `chromium` and `chromium-driver`; `make test` installs them)."""
    if not (CHROMIUM and DRIVER):
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test installs them with apt-get)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1600,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)  # both paths given: no driver download
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: WebDriver, condition: object, what: str, seconds: float = WAIT) -> object:
    """WebDriverWait with a failure that says what did not happen, and the page's error lines."""
    try:
        # The page re-renders lists as jobs and answers arrive: an element the condition read a moment ago may be
        # gone by the next line of it, which means "not yet", not a failure.
        stale = (StaleElementReferenceException,)
        return WebDriverWait(driver, seconds, ignored_exceptions=stale).until(condition)  # type: ignore[arg-type]
    except TimeoutException:
        errors = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".error") if e.text]
        pytest.fail(f"{what} did not happen in {seconds} s; errors shown: {errors}")


def open_with_key(driver: WebDriver, server: Served, path: str) -> None:
    """Open `path` in a tab that already holds the key (as after the key dialog), whatever ran before."""
    driver.get(server.url + "/healthz")
    driver.execute_script("sessionStorage.setItem('paperscope.apiKey', arguments[0])", KEY)
    driver.get(server.url + path)


def ask(driver: WebDriver, question: str) -> WebElement:
    """Type the question, press Enter, and wait for its answer (the message with its sources)."""
    before = len(driver.find_elements(By.CSS_SELECTOR, ".message.assistant"))
    box = driver.find_element(By.ID, "question")
    box.send_keys(question, Keys.ENTER)
    return answer_number(driver, before)


def answer_number(driver: WebDriver, n: int) -> WebElement:
    """The n-th (0-based) assistant message once its answer is complete."""

    def done(d: WebDriver) -> WebElement | bool:
        messages = d.find_elements(By.CSS_SELECTOR, ".message.assistant")
        if len(messages) > n and messages[n].get_attribute("aria-busy") is None:
            return messages[n]
        return False

    found = wait(driver, done, f"answer {n + 1}")
    assert isinstance(found, WebElement)
    return found


def test_ask_read_the_answer_and_see_the_evidence_on_the_page(
    browser: WebDriver, server: Served, sample_pdf_ids: dict[str, str], tmp_path: Path
) -> None:
    browser.get(server.url + "/healthz")
    browser.execute_script("sessionStorage.clear()")
    browser.get(server.url + "/")
    # The papers list needs the key: the page asks for it once and keeps it for the tab.
    key = wait(browser, lambda d: d.find_element(By.ID, "key-input").is_displayed(), "the key dialog")
    assert key
    browser.find_element(By.ID, "key-input").send_keys(KEY)
    browser.find_element(By.ID, "key-ok").click()
    wait(browser, lambda d: "FlashRank" in d.find_element(By.ID, "paper-list").text, "the papers list")
    assert browser.execute_script("return sessionStorage.getItem('paperscope.apiKey')") == KEY

    answer = ask(browser, QUESTION)
    assert int(answer.get_attribute("data-tokens")) >= 1  # the text came as the stream's token events
    text = answer.find_element(By.CSS_SELECTOR, ".text").text
    assert "FlashRank" in text and "[1]" in text
    sources = answer.find_elements(By.CSS_SELECTOR, ".source")
    assert sources and sources[0].text.startswith("[1]FlashRank: Cheap Listwise Reranking")
    first = answer.find_element(By.CSS_SELECTOR, ".text .cite[data-n='1']")
    doc_id, chunk = first.get_attribute("data-citation").rsplit(":", 1)
    assert doc_id == sample_pdf_ids["flashrank"]

    first.click()
    image = browser.find_element(By.ID, "page-image")
    loaded = "return arguments[0].complete && arguments[0].naturalWidth > 0"
    wait(browser, lambda d: image.get_attribute("data-page") and d.execute_script(loaded, image), "the page image")
    page = int(image.get_attribute("data-page"))
    assert image.get_attribute("data-chunk") == chunk and image.get_attribute("src").startswith("blob:")
    assert f"chunk {chunk} highlighted" in image.get_attribute("alt")
    assert browser.find_element(By.ID, "viewer-title").text.startswith("FlashRank")
    current = browser.find_element(By.CSS_SELECTOR, "#neighbours .current")
    assert current.get_attribute("data-chunk") == chunk
    assert len(browser.find_elements(By.CSS_SELECTOR, "#neighbours .neighbour")) >= 3  # the chunks around it
    # The image shown is the page with the chunk drawn: as the route renders it, boxes on this page.
    with server.client() as http:
        boxes = http.get(f"/v1/documents/{doc_id}/chunks/{chunk}").json()["boxes"]
    assert page == boxes[0]["page"]
    browser.save_screenshot(str(tmp_path / "page.png"))
    if os.environ.get("PAPERSCOPE_SCREENSHOT"):
        browser.save_screenshot(os.environ["PAPERSCOPE_SCREENSHOT"])

    label = browser.find_element(By.ID, "page-label")
    step, arrow = (1, "page-next") if "of 6" in label.text and page < 6 else (-1, "page-prev")
    browser.find_element(By.ID, arrow).click()
    wait(browser, lambda d: image.get_attribute("data-page") == str(page + step), "the page turn")
    assert label.text == f"page {page + step} of 6"

    answer.find_element(By.CSS_SELECTOR, ".trace summary").click()
    trace = answer.find_element(By.CSS_SELECTOR, ".trace").text
    assert "track" in trace and "single-shot" in trace and "timings" in trace and "embedding_model" in trace

    # A follow-up stays on the paper: the history went with it.
    follow_up = ask(browser, "What about its ablation?")
    cited = {c.get_attribute("data-citation").split(":")[0] for c in follow_up.find_elements(By.CSS_SELECTOR, ".cite")}
    assert cited == {sample_pdf_ids["flashrank"]}


def test_a_link_asks_at_once(browser: WebDriver, server: Served, sample_pdf_ids: dict[str, str]) -> None:
    question = "How many GPUs were used to pretrain Marten-1B?"
    open_with_key(browser, server, f"/?q={quote(question)}")  # the key is kept for the tab: not asked again
    answer = answer_number(browser, 0)
    assert not browser.find_element(By.ID, "key-dialog").is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, ".message.user").text == question
    assert "Marten" in answer.text
    first = answer.find_element(By.CSS_SELECTOR, ".cite[data-n='1']")
    assert first.get_attribute("data-citation").startswith(sample_pdf_ids["marten"])


def test_an_answer_is_copied_as_markdown_with_its_references_and_as_bibtex(browser: WebDriver, server: Served) -> None:
    question = "How many GPUs were used to pretrain Marten-1B?"
    open_with_key(browser, server, f"/?q={quote(question)}")
    answer = answer_number(browser, 0)
    shown = answer.find_element(By.CSS_SELECTOR, ".export-bar textarea.export")
    assert not shown.is_displayed()
    answer.find_element(By.CSS_SELECTOR, ".export-button[data-format='markdown']").click()
    wait(browser, lambda d: "## References" in (shown.get_attribute("value") or ""), "the Markdown export")
    markdown = shown.get_attribute("value") or ""
    assert markdown.startswith(f"**{question}**") and "1. Oskar Nilsson, Fatima Haddad" in markdown
    assert "Marten-1B: Pretraining a Compact Language Model" in markdown and "[1]" in markdown
    answer.find_element(By.CSS_SELECTOR, ".export-button[data-format='bibtex']").click()
    wait(browser, lambda d: (shown.get_attribute("value") or "").startswith("@"), "the BibTeX export")
    entries = bibtexparser.parse_string(shown.get_attribute("value") or "").entries
    assert entries and entries[0].fields_dict["title"].value.strip("{}").startswith("Marten-1B")


def test_text_from_papers_and_questions_is_shown_as_text(browser: WebDriver, server: Served, tmp_path: Path) -> None:
    title = 'Hostile <b>Bold</b> <a href="https://example.com/x">Link</a> Tomatoes'
    paper = tmp_path / "hostile.md"
    paper.write_text(
        f"# {title}\n\n## Watering\n\nTomato plants <script>window.pwned = 1</script> need deep watering; "
        '<img src="x" onerror="window.pwned = 2"> see [the guide](https://example.com/guide).\n'
    )
    with server.client() as http:
        job = wait_job(http, upload(http, paper, kind="text/markdown").json()["job_id"])
    assert job["state"] == "done", job
    try:
        open_with_key(browser, server, "/")
        wait(browser, lambda d: "Tomatoes" in d.find_element(By.ID, "paper-list").text, "the papers list")
        listed = browser.find_element(By.ID, "paper-list")
        assert "<b>Bold</b>" in listed.text
        # The paper named by its title: whatever other tests uploaded to the session's server, this is its question.
        img = '<img src=x onerror="window.pwned=3">'
        question = f"In Hostile Bold Link Tomatoes, how often do {img} tomato plants need watering?"
        answer = ask(browser, question)
        assert "<img src=x" in browser.find_elements(By.CSS_SELECTOR, ".message.user")[-1].text
        assert "<script>" in answer.text or "Tomato" in answer.text
        tags = ("b", "a", "img", "script")
        markup = browser.find_elements(By.CSS_SELECTOR, ", ".join(f"#paper-list {t}, .messages {t}" for t in tags))
        assert markup == []
        # Its chunk opened from the source list: a text file has no page to draw, its text is shown as text.
        cite = next(
            c
            for c in answer.find_elements(By.CSS_SELECTOR, ".source .cite")
            if c.get_attribute("data-citation").startswith(job["doc_id"])
        )
        cite.click()
        note = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#page-frame .no-pages"), "the no-pages note")
        assert isinstance(note, list) and note[0].text == "This paper was read from a text file: no pages to show."
        neighbours = browser.find_element(By.ID, "neighbours")
        assert "<script>window.pwned = 1</script>" in neighbours.text
        assert neighbours.find_elements(By.CSS_SELECTOR, "script, img, a") == []
        assert browser.execute_script("return window.pwned === undefined")
    finally:
        with server.client() as http:
            http.delete(f"/v1/documents/{job['doc_id']}")


def test_bidi_overrides_in_a_title_are_shown_not_obeyed(browser: WebDriver, server: Served, tmp_path: Path) -> None:
    """A right-to-left override would show "Invoice gnp.exe" as "Invoice exe.png": the page shows its escape, as the
    terminal does."""
    paper = tmp_path / "bidi.md"
    paper.write_text("# Invoice \u202egnp.exe of Seed Catalogues\n\n## Orders\n\nSeed catalogues list orders.\n")
    with server.client() as http:
        job = wait_job(http, upload(http, paper, kind="text/markdown").json()["job_id"])
    assert job["state"] == "done", job
    try:
        open_with_key(browser, server, "/")
        wait(browser, lambda d: "Seed Catalogues" in d.find_element(By.ID, "paper-list").text, "the papers list")
        assert "Invoice \\u202egnp.exe of Seed Catalogues" in browser.find_element(By.ID, "paper-list").text
        assert "\u202e" not in browser.page_source
    finally:
        with server.client() as http:
            http.delete(f"/v1/documents/{job['doc_id']}")


def test_upload_follows_the_job_and_remove_takes_the_paper_away(
    browser: WebDriver, server: Served, sample_pdfs: dict[str, Path], tmp_path: Path
) -> None:
    pdf = tmp_path / "tabretriever-copy.pdf"  # bytes of its own: a new paper, whatever other tests uploaded
    pdf.write_bytes(sample_pdfs["tabretriever"].read_bytes() + b"\n%a copy for the upload test\n")
    open_with_key(browser, server, "/")
    wait(browser, lambda d: "FlashRank" in d.find_element(By.ID, "paper-list").text, "the papers list")
    browser.find_element(By.ID, "upload-input").send_keys(str(pdf))
    item = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#uploads .upload-item.done"), "the ingest job")
    assert isinstance(item, list) and item[0].find_element(By.CSS_SELECTOR, ".job-file").text == pdf.name
    assert item[0].find_element(By.CSS_SELECTOR, ".job-state").text == "ingested"
    row = wait(
        browser,
        lambda d: next((r for r in d.find_elements(By.CSS_SELECTOR, ".paper") if "TabRetriever" in r.text), False),
        "the uploaded paper in the list",
    )
    assert isinstance(row, WebElement) and "ready" in row.text
    doc_id = row.get_attribute("data-doc-id")
    row.find_element(By.CSS_SELECTOR, "button.danger").click()
    browser.switch_to.alert.accept()
    wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f".paper[data-doc-id='{doc_id}']"), "the removal")
    with server.client() as http:
        assert doc_id not in {p["doc_id"] for p in http.get("/v1/documents").json()}


def test_a_claims_citation_highlights_that_sentences_lines(browser: WebDriver, server: Served) -> None:
    """Clicking the [n] of an extracted sentence opens its span: the page is drawn with only the lines of that
    sentence highlighted, fewer than the chunk's, and they hold the sentence."""
    open_with_key(browser, server, "/")
    answer = ask(browser, QUESTION)
    cite = answer.find_element(By.CSS_SELECTOR, ".text .cite[data-span]")
    claim = cite.find_element(By.XPATH, "preceding-sibling::span[contains(@class, 'claim')][1]")
    assert claim.get_attribute("data-verdict") == "supported"
    assert claim.find_element(By.CSS_SELECTOR, ".verdict").text == "✓"
    cite.click()
    image = browser.find_element(By.ID, "page-image")
    loaded = "return arguments[0].complete && arguments[0].naturalWidth > 0"
    wait(browser, lambda d: image.get_attribute("data-span") and d.execute_script(loaded, image), "the claim's page")
    doc_id, index = cite.get_attribute("data-claim").rsplit(":", 1)
    span, page = image.get_attribute("data-span"), image.get_attribute("data-page")
    assert image.get_attribute("data-chunk") == index and span == cite.get_attribute("data-span")
    url = f"/v1/documents/{doc_id}/pages/{page}.png"
    with server.client() as http:
        chunk = http.get(f"/v1/documents/{doc_id}/chunks/{index}").json()
        whole = http.get(url, params={"chunk": index, "dpi": 72})
        only = http.get(url, params={"chunk": index, "span": span, "dpi": 72})
    drawn = int(only.headers["x-paperscope-boxes"])
    assert 0 < drawn < int(whole.headers["x-paperscope-boxes"])
    start, end = (int(v) for v in span.split("-"))
    sentence = set(re.findall(r"[a-z]{4,}", chunk["text"][start:end].lower()))
    assert sentence and claim.text.lower().startswith(chunk["text"][start:end].lower()[:30])
    assert chunk["boxes"] and (
        chunk["boxes"][0]["page"] == int(page) or any(b["page"] == int(page) for b in chunk["boxes"])
    )
    # The drawn image differs from the plain page only on the sentence's lines.
    plain = http_get(server, url, {"dpi": 72})
    changed = (pixels(only.content) != pixels(plain)).any(axis=2)
    rows = changed.any(axis=1).nonzero()[0]
    whole_rows = (pixels(whole.content) != pixels(plain)).any(axis=2).any(axis=1).nonzero()[0]
    assert 0 < len(rows) < len(whole_rows)


def http_get(server: Served, url: str, params: dict[str, object]) -> bytes:
    with server.client() as http:
        response = http.get(url, params=params)
        assert response.status_code == 200
        return response.content


@pytest.fixture(scope="module")
def model_server(
    tmp_path_factory: pytest.TempPathFactory, sample_pdfs: dict[str, Path], local_embedder: CachedEmbedder
) -> Iterator[Served]:
    """A server answering with the agent, its model scripted to write one sentence the sources hold and one whose
    figures nobody wrote."""
    from tests.openai_server import ScriptedOpenAIServer
    from tests.test_e2e_agent import half_invented_script

    home = make_home(tmp_path_factory.mktemp("claims-home"), [sample_pdfs[n] for n in PRELOADED], local_embedder)
    with ScriptedOpenAIServer(half_invented_script()) as model:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test", "PAPERSCOPE_LLM_MODEL": "scripted-model"}
        with serve(home, tmp_path_factory.mktemp("claims-log") / "stderr.txt", env) as served:
            yield served


def test_each_sentence_of_a_models_answer_shows_its_verdict(browser: WebDriver, model_server: Served) -> None:
    browser.get(model_server.url + "/")
    answer = ask(browser, QUESTION)
    claims = answer.find_elements(By.CSS_SELECTOR, ".text .claim")
    held = next(c for c in claims if "1.2 million queries" in c.text)
    invented = next(c for c in claims if "3.5 billion" in c.text)
    assert held.get_attribute("data-verdict") == "supported" and held.find_element(By.CSS_SELECTOR, ".verdict").text
    assert invented.get_attribute("data-verdict") == "unsupported"
    badge = invented.find_element(By.CSS_SELECTOR, ".verdict.unsupported")
    assert badge.text == "✗" and "3.5 billion" in (badge.get_attribute("title") or "")
