"""The web page as a researcher reads with it, in a real browser against a real `paperscope serve` (see
test_page.py, whose browser and helpers these tests share).

The papers list names each paper by its first author, year and venue, filters as one types and sorts; the page
viewer zooms and widens, its highlight kept; the PDF opens at the page shown, fetched with the key; an empty
conversation shows two example questions made from the papers (or how to upload, with none); the note that no
language model writes the answers is shown once, and never with a model; an answer extracted at once still
appears a few words at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select

from tests.served import KEY, Served, upload, wait_job
from tests.web import test_page as page
from tests.web.test_page import QUESTION, answer_number, ask, open_with_key, wait

# The same fixtures as test_page.py: one Chromium for this module, and the server whose model writes answers.
browser = page.browser
model_server = page.model_server

NO_MODEL = "No language model is configured"
LOADED = "return arguments[0].complete && arguments[0].naturalWidth > 0"


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def listed(http: httpx.Client) -> dict[str, dict[str, Any]]:
    rows: list[dict[str, Any]] = http.get("/v1/documents").json()
    return {row["doc_id"]: row for row in rows}


def rows_shown(driver: WebDriver) -> list[str]:
    """The doc_ids of the papers list, in the order shown."""
    return [r.get_attribute("data-doc-id") or "" for r in driver.find_elements(By.CSS_SELECTOR, "#paper-list .paper")]


def open_first_citation(driver: WebDriver, answer: WebElement) -> tuple[str, str, WebElement]:
    """Click the answer's [1] and wait for its highlighted page: (doc_id, chunk, the page image)."""
    first = answer.find_element(By.CSS_SELECTOR, ".text .cite[data-n='1']")
    doc_id, chunk = (first.get_attribute("data-citation") or "").rsplit(":", 1)
    first.click()
    image = driver.find_element(By.ID, "page-image")
    wait(
        driver,
        lambda d: image.get_attribute("data-chunk") == chunk and d.execute_script(LOADED, image),
        "the cited page",
    )
    return doc_id, chunk, image


def test_the_papers_list_names_authors_filters_as_one_types_and_sorts(
    browser: WebDriver, server: Served, http: httpx.Client, sample_pdf_ids: dict[str, str]
) -> None:
    papers = listed(http)
    flashrank, marten = papers[sample_pdf_ids["flashrank"]], papers[sample_pdf_ids["marten"]]
    assert flashrank["authors"][0] == "Mira Okafor" and len(flashrank["authors"]) == 3
    assert isinstance(flashrank["ingested_at"], int) and flashrank["ingested_at"] > 1_700_000_000
    open_with_key(browser, server, "/")
    wait(browser, lambda d: "FlashRank" in d.find_element(By.ID, "paper-list").text, "the papers list")
    row = browser.find_element(By.CSS_SELECTOR, f".paper[data-doc-id='{flashrank['doc_id']}']")
    byline = row.find_element(By.CSS_SELECTOR, ".paper-byline").text
    expected = " · ".join(str(v) for v in ("Okafor et al.", flashrank["year"], flashrank["venue"]) if v)
    assert byline == expected and byline.startswith("Okafor et al.")
    assert row.find_element(By.CSS_SELECTOR, ".paper-byline").get_attribute("title") == ", ".join(flashrank["authors"])

    # Typed a letter at a time: the list narrows as it is typed, by author, then by title, venue or year.
    box = browser.find_element(By.ID, "paper-filter")
    for letter in "okafor":
        box.send_keys(letter)
    wait(browser, lambda d: rows_shown(d) == [flashrank["doc_id"]], "the list narrowed to Okafor's paper")
    assert browser.find_element(By.ID, "paper-count").text == f"1 of {len(papers)} papers"
    for term, kept in [("marten", marten), ("reranking", flashrank)] + (
        [(str(marten["venue"]).split()[0], marten)] if marten["venue"] else []
    ):
        box.clear()
        box.send_keys(term)
        wait(browser, lambda d, kept=kept: kept["doc_id"] in rows_shown(d), f"the filter {term!r} keeping its paper")
        shown = rows_shown(browser)
        assert all(term.lower() in searchable(papers[d]) for d in shown), (term, shown)
        assert len(shown) < len(papers)
    box.send_keys("zzz-no-such-paper")
    wait(browser, lambda d: not rows_shown(d), "the list empty")
    assert "No paper matches the filter." in browser.find_element(By.ID, "paper-list").text
    box.clear()
    box.send_keys(" ")  # clear() sends no input event: a space filters nothing, and is one
    wait(browser, lambda d: len(rows_shown(d)) == len(listed(http)), "the whole list back")

    # Sorted as chosen; a paper without the field goes last.
    sort = Select(browser.find_element(By.ID, "paper-sort"))
    sort.select_by_value("year")
    years = [listed(http)[d]["year"] or 0 for d in rows_shown(browser)]
    assert years == sorted(years, reverse=True)
    sort.select_by_value("author")
    firsts = [surname(listed(http)[d]["authors"]) for d in rows_shown(browser)]
    named = [f for f in firsts if f]
    assert named == sorted(named, key=str.casefold) and firsts == named + [""] * (len(firsts) - len(named))
    sort.select_by_value("added")
    added = [listed(http)[d]["ingested_at"] or 0 for d in rows_shown(browser)]
    assert added == sorted(added, reverse=True)
    sort.select_by_value("title")
    titles = [listed(http)[d]["title"].casefold() for d in rows_shown(browser)]
    assert titles == sorted(titles)


def searchable(row: dict[str, Any]) -> str:
    return " ".join(str(v) for v in [row["title"], *row["authors"], row["venue"], row["year"]] if v).lower()


def surname(authors: list[str]) -> str:
    """As the page takes it: "Okafor, Mira" or "Mira Okafor" -> "Okafor"."""
    if not authors:
        return ""
    return authors[0].split(",")[0].strip() if "," in authors[0] else authors[0].split()[-1]


def test_zoom_and_wide_mode_enlarge_the_page_and_keep_its_highlight(browser: WebDriver, server: Served) -> None:
    open_with_key(browser, server, "/")
    answer = ask(browser, QUESTION)
    _, chunk, image = open_first_citation(browser, answer)
    frame = browser.find_element(By.ID, "page-frame")
    fitted, drawn = image.size["width"], int(browser.execute_script("return arguments[0].naturalWidth", image))
    assert abs(fitted - frame.size["width"]) < 40  # fits the frame
    assert browser.find_element(By.ID, "zoom-label").text == "100%"

    browser.find_element(By.ID, "zoom-in").click()
    browser.find_element(By.ID, "zoom-in").click()
    wait(browser, lambda d: image.size["width"] >= fitted * 1.45, "the page shown larger")
    assert browser.find_element(By.ID, "zoom-label").text == "150%" and image.get_attribute("data-zoom") == "1.5"
    # Drawn again for its new size, the cited chunk still highlighted on it.
    sharper = "return arguments[0].naturalWidth > arguments[1] && arguments[0].complete"
    wait(browser, lambda d: d.execute_script(sharper, image, drawn * 1.3), "the page drawn sharper")
    assert image.get_attribute("data-chunk") == chunk and f"chunk {chunk} highlighted" in (
        image.get_attribute("alt") or ""
    )
    assert (image.get_attribute("src") or "").startswith("blob:")
    assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", frame)
    browser.find_element(By.ID, "zoom-fit").click()
    wait(browser, lambda d: abs(image.size["width"] - fitted) < 5, "the page fitted again")
    assert browser.find_element(By.ID, "zoom-fit").get_attribute("disabled") is not None

    viewer = browser.find_element(By.ID, "viewer")
    narrow = viewer.size["width"]
    wide = browser.find_element(By.ID, "viewer-wide")
    wide.click()
    wait(browser, lambda d: viewer.size["width"] > narrow * 1.4, "the viewer widened")
    assert wide.get_attribute("aria-pressed") == "true" and not browser.find_element(By.ID, "papers").is_displayed()
    assert viewer.size["width"] > browser.find_element(By.ID, "chat").size["width"] * 1.5  # most of the width
    assert image.size["width"] > fitted * 1.4 and image.get_attribute("data-chunk") == chunk
    wide.click()
    wait(browser, lambda d: abs(viewer.size["width"] - narrow) < 5, "the viewer narrowed again")
    assert browser.find_element(By.ID, "papers").is_displayed()


FETCH_PDF = """
const [path, key, done] = arguments;
fetch(path, {headers: {Authorization: `Bearer ${key}`}})
  .then(async (r) => done({status: r.status, type: r.headers.get("content-type"),
                           head: new TextDecoder().decode((await r.arrayBuffer()).slice(0, 5))}))
  .catch((e) => done({error: String(e)}));
"""


def test_the_pdf_opens_at_the_page_shown(
    browser: WebDriver, server: Served, http: httpx.Client, sample_pdf_ids: dict[str, str], tmp_path: Path
) -> None:
    open_with_key(browser, server, "/")
    answer = ask(browser, QUESTION)
    doc_id, _, image = open_first_citation(browser, answer)
    assert doc_id == sample_pdf_ids["flashrank"]
    link = browser.find_element(By.ID, "open-pdf")
    shown = image.get_attribute("data-page")
    wait(browser, lambda d: link.is_displayed() and link.get_attribute("data-page") == shown, "the open-PDF link")
    href = link.get_attribute("href") or ""
    assert href == f"{server.url}/v1/documents/{doc_id}/pdf#page={shown}" and link.get_attribute("target") == "_blank"
    assert link.text == f"Open the PDF at page {shown} ↗"
    # The route answers the PDF to the page's key, and the key is no part of the link.
    fetched = browser.execute_async_script(FETCH_PDF, f"/v1/documents/{doc_id}/pdf", KEY)
    assert fetched == {"status": 200, "type": "application/pdf", "head": "%PDF-"}
    assert KEY not in href

    # Clicked: a new tab shows the PDF, fetched with the key, at that page.
    before = set(browser.window_handles)
    main = browser.current_window_handle
    link.click()
    wait(browser, lambda d: len(d.window_handles) > len(before), "the new tab")
    (tab,) = set(browser.window_handles) - before
    browser.switch_to.window(tab)
    try:
        wait(
            browser,
            lambda d: d.current_url.startswith("blob:") and d.current_url.endswith(f"#page={shown}"),
            "the PDF at its page in the new tab",
        )
        assert browser.execute_script("return document.contentType") == "application/pdf"
    finally:
        browser.close()
        browser.switch_to.window(main)
    # Turning the page moves the link with it.
    label = browser.find_element(By.ID, "page-label").text
    step, arrow = (1, "page-next") if int(shown or 0) < int(label.split()[-1]) else (-1, "page-prev")
    browser.find_element(By.ID, arrow).click()
    turned = str(int(shown or 0) + step)
    wait(browser, lambda d: image.get_attribute("data-page") == turned, "the page turn")
    assert link.get_attribute("data-page") == turned and (link.get_attribute("href") or "").endswith(f"#page={turned}")

    # A paper read from a text file has no PDF: the link is not shown.
    notes = tmp_path / "compost-notes.md"
    notes.write_text("# Notes on Compost Heaps\n\n## Turning\n\nTurn a compost heap every two weeks to air it.\n")
    job = wait_job(http, upload(http, notes, kind="text/markdown").json()["job_id"])
    assert job["state"] == "done", job
    try:
        assert http.get(f"/v1/documents/{job['doc_id']}/pdf").status_code == 404
        text_answer = ask(browser, "In Notes on Compost Heaps, how often should a compost heap be turned?")
        cite = next(
            c
            for c in text_answer.find_elements(By.CSS_SELECTOR, ".source .cite")
            if (c.get_attribute("data-citation") or "").startswith(job["doc_id"])
        )
        cite.click()
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#page-frame .no-pages"), "the no-pages note")
        assert not link.is_displayed()
    finally:
        http.delete(f"/v1/documents/{job['doc_id']}")


def test_an_empty_conversation_offers_two_questions_from_the_papers(
    browser: WebDriver, server: Served, http: httpx.Client
) -> None:
    open_with_key(browser, server, "/")
    hint = browser.find_element(By.ID, "hint")
    two = "the hint with two questions"
    wait(browser, lambda d: hint.is_displayed() and len(d.find_elements(By.CSS_SELECTOR, ".hint-question")) == 2, two)
    questions = [q.text for q in browser.find_elements(By.CSS_SELECTOR, ".hint-question")]
    first = next(row for row in http.get("/v1/documents").json() if row["status"] == "ready")
    assert questions[0] == f"What does {first['title'].split(': ')[0]} propose?"
    assert questions[1] != questions[0] and questions[1].endswith("?")
    # A click puts it in the question box, to ask as it is or edit.
    browser.find_elements(By.CSS_SELECTOR, ".hint-question")[1].click()
    box = browser.find_element(By.ID, "question")
    assert box.get_attribute("value") == questions[1]
    assert browser.switch_to.active_element == box
    box.send_keys(Keys.ENTER)
    wait(browser, lambda d: not hint.is_displayed(), "the hint gone once asked")
    answer_number(browser, 0)
    assert not hint.is_displayed()
    browser.find_element(By.ID, "new-chat").click()
    wait(browser, lambda d: hint.is_displayed(), "the hint back in a new conversation")
    assert [q.text for q in browser.find_elements(By.CSS_SELECTOR, ".hint-question")] == questions


#: Run before the page's scripts: GET /v1/documents answers these rows (JSON) instead of the server's papers.
FAKE_LISTING = """
const rows = %s;
const real = window.fetch.bind(window);
window.fetch = (input, init) => String(input).split("?")[0] === "/v1/documents" && !(init && init.method)
  ? Promise.resolve(new Response(JSON.stringify(rows), {headers: {"content-type": "application/json"}}))
  : real(input, init);
"""


@contextmanager
def listing(driver: WebDriver, rows: list[dict[str, Any]]) -> Iterator[None]:
    """Pages opened in the block see `rows` as the papers list (Chromium's DevTools protocol runs the script
    before the page's own)."""
    script = FAKE_LISTING % json.dumps(rows)
    injected = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})  # type: ignore[attr-defined]
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": injected["identifier"]})  # type: ignore[attr-defined]


def paper_row(doc_id: str, title: str, authors: list[str], year: int | None, venue: str | None, added: int) -> Any:
    return {
        "doc_id": doc_id, "title": title, "authors": authors, "year": year, "venue": venue, "ingested_at": added,
        "status": "ready", "pages": 4, "n_chunks": 9,
    }  # fmt: skip


PAPERS = [
    paper_row("aaaa1111", "Zebra Finch Song Learning", ["Okafor, Mira", "Lindqvist, Tomas"], 2021, "ACL 2021", 300),
    paper_row("bbbb2222", "Alpine Meadow Pollinators: A Survey", ["Wen Zhao"], 2024, "NeurIPS 2024", 100),
    paper_row("cccc3333", "Moss <b>Growth</b> and Pollinators on Roofs", [], None, None, 200),
]


def test_bylines_venues_and_orders_of_a_known_list(browser: WebDriver, server: Served) -> None:
    with listing(browser, PAPERS):
        open_with_key(browser, server, "/")
        wait(browser, lambda d: len(rows_shown(d)) == 3, "the papers list")
        bylines = {
            r.get_attribute("data-doc-id"): [b.text for b in r.find_elements(By.CSS_SELECTOR, ".paper-byline")]
            for r in browser.find_elements(By.CSS_SELECTOR, ".paper")
        }
        assert bylines == {
            "aaaa1111": ["Okafor and Lindqvist · 2021 · ACL 2021"],
            "bbbb2222": ["Zhao · 2024 · NeurIPS 2024"],
            "cccc3333": [],
        }
        box = browser.find_element(By.ID, "paper-filter")
        for term, kept in [("neurips", ["bbbb2222"]), ("2021", ["aaaa1111"]), ("lindqvist", ["aaaa1111"]),
                           ("POLLINATORS", ["bbbb2222", "cccc3333"]), ("moss roofs", ["cccc3333"])]:  # fmt: skip
            box.clear()
            box.send_keys(term)
            wait(browser, lambda d, kept=kept: sorted(rows_shown(d)) == kept, f"the filter {term!r}")
        box.clear()
        box.send_keys(" ")
        sort = Select(browser.find_element(By.ID, "paper-sort"))
        for order, expected in [
            ("title", ["bbbb2222", "cccc3333", "aaaa1111"]),
            ("year", ["bbbb2222", "aaaa1111", "cccc3333"]),
            ("author", ["aaaa1111", "bbbb2222", "cccc3333"]),
            ("added", ["aaaa1111", "cccc3333", "bbbb2222"]),
        ]:
            sort.select_by_value(order)
            assert rows_shown(browser) == expected, order
        # A word two titles share is a topic to ask across papers; titles are shown as text.
        questions = [q.text for q in browser.find_elements(By.CSS_SELECTOR, ".hint-question")]
        assert questions == [
            "What does Zebra Finch Song Learning propose?",
            "What do the papers say about pollinators?",
        ]
        assert "Moss <b>Growth</b>" in browser.find_element(By.ID, "paper-list").text
        assert not browser.find_elements(By.CSS_SELECTOR, "#paper-list b, #hint b")


def test_with_no_paper_the_hint_says_to_upload(browser: WebDriver, server: Served) -> None:
    with listing(browser, []):
        open_with_key(browser, server, "/")
        hint = browser.find_element(By.ID, "hint")
        wait(browser, lambda d: hint.is_displayed(), "the hint")
        assert hint.text == "No papers yet: upload a PDF with “Upload papers…”, then ask about it."
        assert not browser.find_elements(By.CSS_SELECTOR, ".hint-question")


#: Records the text of the answer being written each time it changes, until it is done.
RECORD = """
window.seen = [];
new MutationObserver(() => {
  const busy = document.querySelector(".message.assistant[aria-busy] .text");
  if (busy) window.seen.push(busy.textContent.length);
}).observe(document.getElementById("messages"), {childList: true, subtree: true, characterData: true});
"""


def test_no_model_answers_appear_word_by_word_under_one_note(browser: WebDriver, server: Served) -> None:
    with server.client() as client:
        health = client.get("/healthz").json()
    assert health["llm"] is False
    open_with_key(browser, server, "/")
    note = browser.find_element(By.ID, "model-note")
    wait(browser, lambda d: note.is_displayed(), "the no-model note")
    assert note.text.startswith(NO_MODEL)
    browser.execute_script(RECORD)
    first = ask(browser, QUESTION)
    seen: list[int] = browser.execute_script("return window.seen")
    final = len(first.find_element(By.CSS_SELECTOR, ".text").text)
    # The server sent the extracted answer in one piece; the page showed it in many, each longer than the last.
    assert first.get_attribute("data-tokens") == "1"
    growing = [n for n in seen if n > 0]
    assert len(set(growing)) >= 5 and growing == sorted(growing), seen
    assert growing[0] < final / 3
    ask(browser, "How many GPUs were used to pretrain Marten-1B?")
    # Said once for the page, not under each answer.
    notes = [e for e in browser.find_elements(By.XPATH, f"//*[contains(text(), '{NO_MODEL}')]") if e.is_displayed()]
    assert notes == [note]
    assert NO_MODEL not in browser.find_element(By.ID, "messages").text


def test_with_a_model_there_is_no_such_note(browser: WebDriver, model_server: Served) -> None:
    with model_server.client() as client:
        assert client.get("/healthz").json()["llm"] is True
    browser.get(model_server.url + "/")
    wait(browser, lambda d: "papers" in d.find_element(By.ID, "health").text, "the health line")
    assert not browser.find_element(By.ID, "model-note").is_displayed()
    answer = ask(browser, QUESTION)
    assert "1.2 million queries" in answer.text  # the model's text, streamed as it came
