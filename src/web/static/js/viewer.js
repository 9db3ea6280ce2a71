// The page viewer: a page of the paper with the cited chunk's lines highlighted (drawn by the server), next and
// previous page, zoom and a wide mode, the PDF opened at the page shown, and the chunks around the cited one
// (click one to highlight it instead).

import { getJSON, pageImage, pathOf, pdfBlobUrl } from "./api.js";
import { $, el, pagesLabel, showError, visible } from "./dom.js";

const WINDOW = 2; // neighbours on each side
const MAX_WIDTH = 3000; // pixels asked of the server, whatever the screen and zoom (the server allows 4000)
// Widths of the page as a share of the frame: 1 fits it; more scrolls it sideways too.
const ZOOMS = [1, 1.25, 1.5, 2, 2.5, 3];

export class Viewer {
  /** papers: the PapersPanel (page counts and titles). */
  constructor({ papers }) {
    this.papers = papers;
    this.panel = $("viewer");
    this.image = $("page-image");
    this.frame = $("page-frame");
    this.error = $("viewer-error");
    this.pdfLink = $("open-pdf");
    this.state = null; // {docId, title, page, pages, chunk, boxes}
    this.url = null;
    this.loading = 0; // the latest request wins
    this.zoom = 1; // a step of ZOOMS
    this.drawnWidth = 0; // pixels of the image shown: a larger zoom asks for a sharper one
    this.pdfOf = null; // the doc_id whose page was drawn: it has a PDF to open
    $("page-prev").addEventListener("click", () => this.turn(-1));
    $("page-next").addEventListener("click", () => this.turn(1));
    $("viewer-close").addEventListener("click", () => this.close());
    $("zoom-in").addEventListener("click", () => this.zoomTo(ZOOMS.find((z) => z > this.zoom) || this.zoom));
    $("zoom-out").addEventListener("click", () => this.zoomTo([...ZOOMS].reverse().find((z) => z < this.zoom) || 1));
    $("zoom-fit").addEventListener("click", () => this.zoomTo(1));
    $("viewer-wide").addEventListener("click", () => this.setWide(!this.wide()));
    this.pdfLink.addEventListener("click", (event) => this.openPdf(event));
    this.showZoom();
  }

  /** Show the page at `zoom` times the frame's width, keeping the same part of it in view. */
  zoomTo(zoom) {
    const frame = this.frame;
    const across = frame.scrollLeft / Math.max(1, frame.scrollWidth);
    const down = frame.scrollTop / Math.max(1, frame.scrollHeight);
    this.zoom = zoom;
    this.showZoom();
    frame.scrollLeft = across * frame.scrollWidth;
    frame.scrollTop = down * frame.scrollHeight;
    this.sharpen();
  }

  showZoom() {
    this.image.style.width = `${Math.round(this.zoom * 100)}%`;
    this.image.dataset.zoom = String(this.zoom);
    $("zoom-label").textContent = `${Math.round(this.zoom * 100)}%`;
    $("zoom-out").disabled = this.zoom <= ZOOMS[0];
    $("zoom-fit").disabled = this.zoom === 1;
    $("zoom-in").disabled = this.zoom >= ZOOMS[ZOOMS.length - 1];
  }

  wide() {
    return document.body.classList.contains("wide-viewer");
  }

  /** Wide: the viewer takes most of the width (the papers list steps aside, the chat narrows). */
  setWide(on) {
    document.body.classList.toggle("wide-viewer", on);
    const button = $("viewer-wide");
    button.setAttribute("aria-pressed", String(on));
    button.textContent = on ? "Narrow" : "Wide";
    this.sharpen();
  }

  /** Pixels of page image to ask for: the width it is shown at, on this screen. */
  wantedWidth() {
    const shown = (this.frame.clientWidth || 800) * this.zoom * (window.devicePixelRatio || 1);
    return Math.max(64, Math.min(MAX_WIDTH, Math.round(shown)));
  }

  /** Draw the page again when it is shown larger than it was drawn (zoomed in, or the viewer widened). */
  sharpen() {
    if (!this.state || this.image.hidden || !this.drawnWidth) return;
    if (this.wantedWidth() > this.drawnWidth * 1.1) this.render({ keep: true });
  }

  /** Open the paper's PDF at the page shown, in a new tab. The PDF is fetched with the key (a plain link
   * cannot send it) and opened from a blob: URL with `#page=N`, which browsers' PDF viewers obey. */
  async openPdf(event) {
    event.preventDefault();
    if (!this.state) return;
    const { docId, page } = this.state;
    // Opened now, while the click still allows a new tab; it is given the PDF once fetched.
    const tab = window.open("", "_blank");
    if (!tab) {
      showError(this.error, "The browser refused to open a new tab: allow pop-ups for this page to open the PDF.");
      return;
    }
    tab.opener = null; // as rel="noopener" would: the tab cannot reach back into this page
    tab.document.title = "Loading the PDF…";
    try {
      tab.location.href = `${await pdfBlobUrl(docId)}#page=${page}`;
    } catch (error) {
      tab.close();
      showError(this.error, `The PDF could not be opened: ${error.message}`);
    }
  }

  /** The link to the PDF at `page` of `docId`, or none (a paper read from text has no PDF). The address is the
   * route's, so the link says where it goes; a click fetches it with the key instead (openPdf). */
  showPdfLink(docId, page) {
    this.pdfLink.hidden = !docId;
    if (!docId) return;
    this.pdfLink.href = `${pathOf(docId, "pdf")}#page=${page}`;
    this.pdfLink.dataset.page = String(page);
    this.pdfLink.textContent = `Open the PDF at page ${page} ↗`;
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

  /** Draw the state's page; `keep`: the same page drawn sharper, the one shown staying until it comes. */
  async render({ keep = false } = {}) {
    const { docId, title, page, pages, chunk, span } = this.state;
    this.panel.hidden = false;
    $("viewer-title").textContent = visible(title);
    $("page-label").textContent = pages ? `page ${page} of ${pages}` : `page ${page}`;
    $("page-prev").disabled = page <= 1;
    $("page-next").disabled = Boolean(pages) && page >= pages;
    this.showPdfLink(this.pdfOf === docId ? docId : null, page);
    const ticket = ++this.loading;
    if (!keep) {
      this.frame.querySelector(".no-pages")?.remove();
      this.image.hidden = false;
      this.image.removeAttribute("src");
      this.image.alt = `loading page ${page}…`;
      delete this.image.dataset.page;
    }
    const width = this.wantedWidth();
    try {
      const { url, scale } = await pageImage(docId, page, { chunk, span, width });
      if (ticket !== this.loading) {
        URL.revokeObjectURL(url);
        return;
      }
      showError(this.error, "");
      if (this.url) URL.revokeObjectURL(this.url);
      this.url = url;
      this.drawnWidth = width;
      this.image.onload = keep ? null : () => this.scrollToBoxes(scale);
      this.image.src = url;
      this.pdfOf = docId;
      this.showPdfLink(docId, page);
      const marked = span ? `the cited sentence of chunk ${chunk} highlighted` : `chunk ${chunk} highlighted`;
      this.image.alt = `page ${page} of ${title}${chunk !== null ? `, ${marked}` : ""}`;
      this.image.dataset.page = String(page);
      this.image.dataset.chunk = chunk === null ? "" : String(chunk);
      this.image.dataset.span = span ? `${span[0]}-${span[1]}` : "";
    } catch (error) {
      if (ticket !== this.loading) return;
      if (keep) return; // the page shown stays, less sharp
      this.image.alt = "";
      this.pdfOf = null;
      this.showPdfLink(null);
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
    this.drawnWidth = 0;
  }
}
