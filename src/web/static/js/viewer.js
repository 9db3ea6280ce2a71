// The page viewer: a page of the paper with the cited chunk's lines highlighted (drawn by the server), next and
// previous page, and the chunks around the cited one (click one to highlight it instead).

import { getJSON, pageImage, pathOf } from "./api.js";
import { $, el, pagesLabel, showError, visible } from "./dom.js";

const WINDOW = 2; // neighbours on each side
const MAX_WIDTH = 2000; // pixels asked of the server, whatever the screen

export class Viewer {
  /** papers: the PapersPanel (page counts and titles). */
  constructor({ papers }) {
    this.papers = papers;
    this.panel = $("viewer");
    this.image = $("page-image");
    this.frame = $("page-frame");
    this.error = $("viewer-error");
    this.state = null; // {docId, title, page, pages, chunk, boxes}
    this.url = null;
    this.loading = 0; // the latest request wins
    $("page-prev").addEventListener("click", () => this.turn(-1));
    $("page-next").addEventListener("click", () => this.turn(1));
    $("viewer-close").addEventListener("click", () => this.close());
  }

  /** Open a cited source: its chunk's page, highlighted, with its neighbours. */
  async showSource(source) {
    await this.showChunk(source.doc_id, source.chunk_index, source.title, source.page);
  }

  /** Open a claim: the page of the span it rests on, only that span's lines highlighted, and its chunk. */
  async showClaim(claim, title) {
    const [docId, index] = claim.citation.split(/:(?=\d+$)/);
    await this.showChunk(docId, Number(index), title, claim.page, { span: claim.span, boxes: claim.boxes });
  }

  /** Open a paper at page 1 without a highlight. */
  async showPaper(paper) {
    this.state = { docId: paper.doc_id, title: paper.title, page: 1, pages: paper.pages, chunk: null, boxes: [] };
    $("neighbours").replaceChildren();
    $("viewer-where").textContent = "";
    await this.render();
  }

  /** Open a chunk; with `span` (a claim's), only the lines of that span of its text are highlighted. */
  async showChunk(docId, chunkIndex, title, page, { span = null, boxes = null } = {}) {
    const known = this.papers.paper(docId);
    this.state = {
      docId,
      title: title || (known && known.title) || docId,
      page,
      pages: known ? known.pages : null,
      chunk: chunkIndex,
      span,
      boxes: [],
    };
    this.panel.hidden = false;
    try {
      const found = await getJSON(`${pathOf(docId, "chunks", chunkIndex)}?window=${WINDOW}`);
      this.state.boxes = boxes && boxes.length ? boxes : found.boxes || [];
      this.state.page = this.state.boxes.length ? this.state.boxes[0].page : found.page;
      $("viewer-where").textContent = visible(
        `${found.section_title || "(no section)"} · ${pagesLabel(found.page, found.page_end)} · chunk ${found.chunk_index}`,
      );
      this.showNeighbours(found);
    } catch (error) {
      showError(this.error, error.message);
    }
    await this.render();
  }

  showNeighbours(found) {
    const list = $("neighbours");
    list.replaceChildren();
    for (const chunk of found.window) {
      const current = chunk.chunk_index === found.chunk_index;
      const text = chunk.text.length > 600 ? `${chunk.text.slice(0, 600)}…` : chunk.text;
      list.append(
        el(
          "li",
          { class: current ? "neighbour current" : "neighbour", dataset: { chunk: String(chunk.chunk_index) } },
          el("button", {
            type: "button",
            class: "link",
            text: `chunk ${chunk.chunk_index} · ${chunk.section_title || "(no section)"} · ${pagesLabel(chunk.page, chunk.page_end)}`,
            disabled: current ? true : null,
            on: { click: () => this.showChunk(found.doc_id, chunk.chunk_index, this.state.title, chunk.page) },
          }),
          el("p", { class: "chunk-text", text }),
        ),
      );
    }
  }

  async turn(step) {
    if (!this.state) return;
    const next = this.state.page + step;
    if (next < 1 || (this.state.pages && next > this.state.pages)) return;
    this.state.page = next;
    await this.render();
  }

  async render() {
    const { docId, title, page, pages, chunk, span } = this.state;
    this.panel.hidden = false;
    $("viewer-title").textContent = visible(title);
    $("page-label").textContent = pages ? `page ${page} of ${pages}` : `page ${page}`;
    $("page-prev").disabled = page <= 1;
    $("page-next").disabled = Boolean(pages) && page >= pages;
    const ticket = ++this.loading;
    this.frame.querySelector(".no-pages")?.remove();
    this.image.hidden = false;
    this.image.removeAttribute("src");
    this.image.alt = `loading page ${page}…`;
    delete this.image.dataset.page;
    const width = Math.min(MAX_WIDTH, Math.round((this.frame.clientWidth || 800) * (window.devicePixelRatio || 1)));
    try {
      const { url, scale } = await pageImage(docId, page, { chunk, span, width: Math.max(64, width) });
      if (ticket !== this.loading) {
        URL.revokeObjectURL(url);
        return;
      }
      showError(this.error, "");
      if (this.url) URL.revokeObjectURL(this.url);
      this.url = url;
      this.image.onload = () => this.scrollToBoxes(scale);
      this.image.src = url;
      const marked = span ? `the cited sentence of chunk ${chunk} highlighted` : `chunk ${chunk} highlighted`;
      this.image.alt = `page ${page} of ${title}${chunk !== null ? `, ${marked}` : ""}`;
      this.image.dataset.page = String(page);
      this.image.dataset.chunk = chunk === null ? "" : String(chunk);
      this.image.dataset.span = span ? `${span[0]}-${span[1]}` : "";
    } catch (error) {
      if (ticket !== this.loading) return;
      this.image.alt = "";
      if (error.code === "not_a_pdf") {
        // Read from Markdown or text: there is no page to draw; the chunks below are the evidence.
        this.image.hidden = true;
        this.frame.prepend(el("p", { class: "no-pages", text: "This paper was read from a text file: no pages to show." }));
        $("page-label").textContent = "";
        $("page-prev").disabled = $("page-next").disabled = true;
        showError(this.error, "");
      } else {
        showError(this.error, error.message);
      }
    }
  }

  /** Scroll the page so the first highlighted line is in view. */
  scrollToBoxes(scale) {
    const box = (this.state.boxes || []).find((b) => b.page === this.state.page);
    if (!box || !scale || !this.image.naturalWidth) return;
    const shown = this.image.clientWidth / this.image.naturalWidth;
    this.frame.scrollTop = Math.max(0, box.rect[1] * scale * shown - 60);
  }

  close() {
    this.panel.hidden = true;
    this.state = null;
    this.loading += 1;
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = null;
  }
}
