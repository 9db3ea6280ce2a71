// The papers panel: the knowledge base's papers (title, year, pages, status), uploads followed through their
// ingest jobs, and removal.

import { ApiError, getJSON, request } from "./api.js";
import { $, el, showError, visible } from "./dom.js";

const POLL_MS = 500;

export class PapersPanel {
  /** onOpen(paper): show a paper's first page (the viewer). */
  constructor({ onOpen }) {
    this.onOpen = onOpen;
    this.papers = new Map(); // doc_id -> row of GET /v1/documents
    this.list = $("paper-list");
    this.uploads = $("uploads");
    this.error = $("papers-error");
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
      this.render(rows);
      showError(this.error, "");
    } catch (error) {
      showError(this.error, `Papers could not be listed: ${error.message}`);
    }
  }

  render(rows) {
    this.list.replaceChildren();
    if (!rows.length) {
      this.list.append(el("li", { class: "muted", text: "No papers yet: upload PDFs to begin." }));
      return;
    }
    for (const row of rows) {
      const facts = [row.year, row.pages ? `${row.pages} page${row.pages === 1 ? "" : "s"}` : null].filter(Boolean).join(" · ");
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
