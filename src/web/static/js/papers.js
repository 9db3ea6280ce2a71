// The papers panel: the knowledge base's papers (title, first author, year, venue, pages, status), filtered as
// the reader types and sorted as they choose, uploads followed through their ingest jobs, and removal.

import { ApiError, getJSON, request } from "./api.js";
import { $, el, showError, visible } from "./dom.js";

const POLL_MS = 500;

/** "Okafor", "Okafor and Zhao", "Okafor et al.": how a paper is named by its authors. */
export function authorsShort(authors) {
  const names = (authors || []).map(surname).filter(Boolean);
  if (!names.length) return "";
  if (names.length === 1) return names[0];
  return names.length === 2 ? `${names[0]} and ${names[1]}` : `${names[0]} et al.`;
}

/** The family name of "Mira Okafor" or "Okafor, Mira" (a name without either is kept whole). */
function surname(name) {
  const given = String(name || "").trim();
  if (given.includes(",")) return given.split(",")[0].trim();
  const words = given.split(/\s+/);
  return words[words.length - 1];
}

const byText = (key) => (a, b) => key(a).localeCompare(key(b), undefined, { sensitivity: "base" });
const byTitle = byText((row) => row.title || "");
/** The orders of the sort control; each breaks its ties by title. Papers without the field go last. */
const ORDERS = {
  title: byTitle,
  year: (a, b) => (b.year || 0) - (a.year || 0) || byTitle(a, b),
  author: (a, b) => {
    const [x, y] = [surname((a.authors || [])[0] || ""), surname((b.authors || [])[0] || "")];
    return (!x - !y) || x.localeCompare(y, undefined, { sensitivity: "base" }) || byTitle(a, b);
  },
  added: (a, b) => (b.ingested_at || 0) - (a.ingested_at || 0) || byTitle(a, b),
};

/** What the filter box looks in: title, authors, venue, year. */
function searchable(row) {
  return [row.title, ...(row.authors || []), row.venue, row.year].filter(Boolean).join(" ").toLocaleLowerCase();
}

export class PapersPanel {
  /** onOpen(paper): show a paper's first page (the viewer); onChange(rows): the papers, each time listed. */
  constructor({ onOpen, onChange = () => {} }) {
    this.onOpen = onOpen;
    this.onChange = onChange;
    this.papers = new Map(); // doc_id -> row of GET /v1/documents
    this.rows = [];
    this.list = $("paper-list");
    this.uploads = $("uploads");
    this.error = $("papers-error");
    this.filter = $("paper-filter");
    this.sort = $("paper-sort");
    this.count = $("paper-count");
    this.filter.addEventListener("input", () => this.render(this.rows));
    this.sort.addEventListener("change", () => this.render(this.rows));
    $("upload-input").addEventListener("change", (event) => {
      const files = [...event.target.files];
      event.target.value = "";
      for (const file of files) this.upload(file);
    });
  }

  /** A paper's row by doc_id (null when the list does not hold it). */
  paper(docId) {
    return this.papers.get(docId) || null;
  }

  async refresh() {
    try {
      const rows = await getJSON("/v1/documents");
      this.papers = new Map(rows.map((row) => [row.doc_id, row]));
      this.rows = rows;
      this.render(rows);
      showError(this.error, "");
      this.onChange(rows);
    } catch (error) {
      showError(this.error, `Papers could not be listed: ${error.message}`);
    }
  }

  /** The rows the filter box lets through, in the order the sort control asks. */
  shown(rows) {
    const terms = this.filter.value.toLocaleLowerCase().split(/\s+/).filter(Boolean);
    const kept = rows.filter((row) => {
      const text = searchable(row);
      return terms.every((term) => text.includes(term));
    });
    return kept.sort(ORDERS[this.sort.value] || byTitle);
  }

  render(rows) {
    this.list.replaceChildren();
    if (!rows.length) {
      this.count.textContent = "";
      this.list.append(el("li", { class: "muted", text: "No papers yet: upload PDFs to begin." }));
      return;
    }
    const shown = this.shown(rows);
    this.count.textContent = shown.length === rows.length ? `${rows.length} papers` : `${shown.length} of ${rows.length} papers`;
    if (!shown.length) this.list.append(el("li", { class: "muted", text: "No paper matches the filter." }));
    for (const row of shown) {
      const who = [authorsShort(row.authors), row.year, row.venue].filter(Boolean).join(" · ");
      const facts = row.pages ? `${row.pages} page${row.pages === 1 ? "" : "s"}` : "";
      const remove = el("button", {
        type: "button",
        class: "link danger",
        text: "Remove",
        "aria-label": `Remove ${row.title}`,
        on: { click: () => this.remove(row) },
      });
      const open = el("button", {
        type: "button",
        class: "paper-title",
        text: row.title || "(untitled)",
        title: row.title,
        disabled: row.pages ? null : true,
        on: { click: () => this.onOpen(row) },
      });
      this.list.append(
        el(
          "li",
          { class: "paper", dataset: { docId: row.doc_id } },
          open,
          who ? el("div", { class: "paper-byline", title: (row.authors || []).join(", "), text: who }) : null,
          el("div", { class: "paper-facts" }, el("span", { text: facts }), el("span", { class: `status ${row.status}`, text: row.status }), remove),
        ),
      );
    }
  }

  async remove(row) {
    if (!window.confirm(`Remove “${row.title}” and all its chunks?`)) return;
    try {
      await request(`/v1/documents/${encodeURIComponent(row.doc_id)}`, { method: "DELETE" });
      await this.refresh();
    } catch (error) {
      showError(this.error, `Could not remove ${row.title}: ${error.message}`);
    }
  }

  /** POST the file, then follow its job until done or failed, showing stage and progress. */
  async upload(file) {
    const state = el("span", { class: "job-state", text: "uploading" });
    const bar = el("progress", { max: "1", "aria-label": `Progress of ${file.name}` });
    const item = el("li", { class: "upload-item" }, el("span", { class: "job-file", text: file.name }), state, bar);
    this.uploads.prepend(item);
    try {
      const form = new FormData();
      form.append("file", file, file.name);
      const accepted = await (await request("/v1/documents", { method: "POST", body: form })).json();
      for (;;) {
        const job = await getJSON(`/v1/jobs/${encodeURIComponent(accepted.job_id)}`);
        const { stage, done, total } = job.progress || {};
        if (job.state === "done" || job.state === "failed") {
          bar.max = 1;
          bar.value = 1;
          state.textContent = visible(job.state === "done" ? job.status : `failed: ${job.error || "no reason given"}`);
          item.classList.add(job.state);
          break;
        }
        state.textContent = total ? `${stage} ${done || 0}/${total}` : stage || job.state;
        if (total) {
          bar.max = total;
          bar.value = done || 0;
        } else {
          bar.removeAttribute("value"); // indeterminate
        }
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
      await this.refresh();
    } catch (error) {
      state.textContent = visible(`failed: ${error instanceof ApiError ? error.message : String(error)}`);
      item.classList.add("failed");
      bar.value = 0;
    }
  }
}
