// The chat: questions with their history (follow-ups stay on the paper), the answer streamed as it is written,
// numbered citations [n] that open the cited page, the source list, and a trace of how the answer came.

import { request, streamChat } from "./api.js";
import { $, el, pagesLabel, textNode, visible } from "./dom.js";
import { Reveal } from "./reveal.js";

// [1], [2, 3], [1-2] as the answer writes them; other brackets stay text.
const CITE = /\[(\d+(?:\s*[,;–-]\s*\d+)*)\]/g;
const TRACK = { A: "one paper", B: "across papers", NONE: "not in the knowledge base" };
// Messages sent as history: the server reads the last 10 answers, and refuses over 200 messages.
const HISTORY = 20;

export class Chat {
  /** onCite(source, claim): open the cited chunk's page (the claim's span of it, when there is one);
   * onEmpty(empty): the conversation became empty (a new one) or not (a question asked). */
  constructor({ onCite, onEmpty = () => {} }) {
    this.onCite = onCite;
    this.onEmpty = onEmpty;
    this.history = []; // [{role, content, sources}] as POST /v1/chat takes it
    this.messages = $("messages");
    this.form = $("ask-form");
    this.input = $("question");
    this.button = $("ask-button");
    this.busy = false;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.ask(this.input.value);
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        this.ask(this.input.value);
      }
    });
    $("new-chat").addEventListener("click", () => {
      this.history = [];
      this.messages.replaceChildren();
      this.onEmpty(true);
      this.input.focus();
    });
  }

  /** Put a question in the box, to ask as it is or edit first. */
  fill(text) {
    this.input.value = text;
    this.input.focus();
  }

  /** Whether the newest text is in view (the reader has not scrolled up to read). */
  atBottom() {
    const m = this.messages;
    return m.scrollHeight - m.scrollTop - m.clientHeight < 40;
  }

  async ask(text) {
    const query = text.trim();
    if (!query || this.busy) return;
    this.busy = true;
    this.button.disabled = true;
    this.input.value = "";
    this.onEmpty(false);
    this.messages.append(el("li", { class: "message user" }, el("p", { class: "text", text: query })));
    const status = el("p", { class: "status-line muted", text: "searching…" });
    const body = el("p", { class: "text" });
    const message = el("li", { class: "message assistant", "aria-busy": "true" }, status, body);
    this.messages.append(message);
    message.scrollIntoView({ block: "end" });
    const history = this.history.slice(-HISTORY);
    let answer = null;
    let failure = null;
    const reveal = new Reveal(body, (show) => {
      const bottom = this.atBottom();
      show();
      if (bottom) this.messages.scrollTop = this.messages.scrollHeight; // unless the reader scrolled up to read
    });
    try {
      await streamChat({ query, history }, (event) => {
        if (event.type === "progress") status.textContent = visible([event.stage, event.detail].filter(Boolean).join(": "));
        else if (event.type === "tool") status.textContent = `called ${event.tool} (${event.seconds.toFixed(2)} s)`;
        else if (event.type === "token") {
          reveal.push(event.text, Boolean(event.whole)); // an answer written at once is revealed gradually
          message.dataset.tokens = String(Number(message.dataset.tokens || 0) + 1); // pieces streamed in
        }
        else if (event.type === "answer") answer = event.answer;
        else if (event.type === "error") failure = event.message;
      });
    } catch (error) {
      failure = error.message;
    }
    await reveal.done(); // the text is read to its end before it is replaced by the answer with its citations
    message.removeAttribute("aria-busy");
    if (answer) {
      status.remove();
      this.showAnswer(message, body, answer);
      this.history.push(
        { role: "user", content: query },
        { role: "assistant", content: answer.answer, sources: answer.sources.map((s) => s.citation) },
      );
    } else {
      status.textContent = "";
      status.append(el("span", { class: "error", role: "alert", text: failure || "the answer stream ended early" }));
    }
    this.busy = false;
    this.button.disabled = false;
    this.input.focus();
  }

  showAnswer(message, body, answer) {
    const sources = new Map(answer.sources.map((s) => [s.n, s]));
    body.replaceChildren(...this.withClaims(answer.answer, sources, answer.claims || []));
    message.dataset.track = answer.track;
    message.dataset.mode = answer.mode;
    for (const note of answer.notes || []) message.append(el("p", { class: "note muted", text: note }));
    if (answer.sources.length) {
      const list = el("ol", { class: "sources" });
      for (const source of answer.sources) {
        const where = [
          source.section_title && `${source.section_title} (${source.section_category})`,
          pagesLabel(source.pages[0], source.pages[1]),
        ].filter(Boolean);
        list.append(
          el(
            "li",
            { class: "source" },
            this.citeButton(source),
            el("span", { class: "source-title", text: `${source.title}${source.year ? ` (${source.year})` : ""}` }),
            el("span", { class: "muted", text: ` · ${where.join(" · ")}` }),
          ),
        );
      }
      message.append(el("h3", { class: "sources-head", text: "Sources" }), list);
    }
    if ((answer.bibliography || []).length) message.append(exportBar(answer));
    message.append(traceView(answer));
    message.scrollIntoView({ block: "end" });
  }

  /**
   * The answer's text as text nodes, each claim's sentence in an element with its verdict beside it, each [n] a
   * button that opens the claim it cites (only that sentence's lines highlighted), else its source.
   */
  withClaims(text, sources, claims) {
    const located = claims.filter((c) => Array.isArray(c.at)).sort((a, b) => a.at[0] - b.at[0]);
    const cites = [...text.matchAll(CITE)]
      .map((m) => ({ start: m.index, end: m.index + m[0].length, numbers: m[1].split(/\s*[,;–-]\s*/).map(Number) }))
      .filter((c) => c.numbers.every((n) => sources.has(n)));
    const parts = [];
    let pos = 0;
    let open = null; // the claim element being filled
    const push = (node) => (open ? open.element : { append: (n) => parts.push(n) }).append(node);
    const stops = new Set([0, text.length]);
    for (const c of located) stops.add(c.at[0]).add(c.at[1]);
    for (const c of cites) stops.add(c.start).add(c.end);
    const points = [...stops].filter((p) => p >= 0 && p <= text.length).sort((a, b) => a - b);
    for (const point of points) {
      if (point > pos) {
        const cite = cites.find((c) => c.start === pos);
        if (cite) {
          for (const n of cite.numbers) push(this.citeButton(sources.get(n), claimOf(located, n, pos)));
          pos = cite.end;
        } else {
          push(textNode(text.slice(pos, point)));
          pos = point;
        }
        if (pos > point) continue; // a boundary inside a citation's brackets: its claim closes after them
      }
      if (open && open.claim.at[1] <= pos) {
        open.element.append(verdictBadge(open.claim));
        open = null;
      }
      const starting = located.find((c) => c.at[0] === point && c.at[1] > point);
      if (starting && !open) {
        open = { claim: starting, element: claimElement(starting) };
        parts.push(open.element);
      }
    }
    return parts;
  }

  citeButton(source, claim = null) {
    const dataset = { n: String(source.n), citation: source.citation };
    if (claim && claim.citation) Object.assign(dataset, { claim: claim.citation, span: claim.span.join("-") });
    return el("button", {
      type: "button",
      class: "cite",
      text: `[${source.n}]`,
      title: `${source.title}, ${pagesLabel(source.pages[0], source.pages[1])}`,
      dataset,
      on: { click: () => this.onCite(source, claim && claim.citation ? claim : null) },
    });
  }
}

const VERDICTS = {
  supported: ["✓", "supported: the cited passage says this"],
  partial: ["◐", "partly supported: the cited passage says some of this"],
  unsupported: ["✗", "not supported: nothing read says this"],
};

function claimElement(claim) {
  return el("span", { class: `claim ${claim.verdict} ${claim.role}`, dataset: { verdict: claim.verdict, role: claim.role } });
}

function verdictBadge(claim) {
  const [mark, meaning] = VERDICTS[claim.verdict] || ["?", claim.verdict];
  const missing = claim.missing && claim.missing.length ? ` (${claim.missing.join(", ")} not in the sources)` : "";
  return el("span", { class: `verdict ${claim.verdict}`, title: meaning + missing, "aria-label": meaning + missing, text: mark });
}

/** The claim an [n] at `pos` cites: the claim holding it, else the one just before it, with that source number. */
function claimOf(claims, n, pos) {
  const holding = claims.find((c) => c.n === n && c.at[0] <= pos && pos < c.at[1]);
  if (holding) return holding;
  const before = claims.filter((c) => c.n === n && c.at[1] <= pos && pos - c.at[1] <= 3);
  return before.length ? before[before.length - 1] : null;
}

/**
 * Copy the answer to cite it: as Markdown with its reference list, or its papers as BibTeX (POST /v1/export, as
 * `ask --format` writes them). The text is copied to the clipboard and shown, selected, for a browser that refuses.
 */
function exportBar(answer) {
  const shown = el("textarea", { class: "export", readonly: true, rows: 6, "aria-label": "exported answer", hidden: true });
  const button = (format, label) =>
    el("button", {
      type: "button",
      class: "export-button",
      dataset: { format },
      text: label,
      on: {
        click: async (event) => {
          const body = { format, query: answer.query, answer: answer.answer, bibliography: answer.bibliography };
          const text = await (await request("/v1/export", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body),
          })).text();
          shown.value = text;
          shown.hidden = false;
          shown.select();
          try {
            await navigator.clipboard.writeText(text);
            event.target.textContent = `${label} ✓ copied`;
          } catch (_) {
            event.target.textContent = `${label} (select and copy below)`;
          }
        },
      },
    });
  return el(
    "div",
    { class: "export-bar" },
    button("markdown", "Copy as Markdown"),
    button("bibtex", "Copy BibTeX"),
    shown,
  );
}

/** Which way the answer came: track, route, mode, the tools called, timings, models, tokens. */
function traceView(answer) {
  const facts = el("dl", { class: "facts" });
  const add = (name, value) => {
    if (value === null || value === undefined || value === "") return;
    facts.append(el("dt", { text: name }), el("dd", { text: value }));
  };
  add("track", `${answer.track} (${TRACK[answer.track] || "?"})`);
  add("mode", `${answer.mode}${answer.extractive ? ", extracted sentences (no language model)" : ""}`);
  const route = answer.route || {};
  add("routed by", route.source);
  add("intent", route.intent);
  if (route.doc_ids && route.doc_ids.length) add("papers named", route.doc_ids.join(", "));
  if (route.target_section_category && route.target_section_category.length) {
    add("sections", route.target_section_category.join(", "));
  }
  const models = Object.entries(answer.models || {}).filter(([, v]) => v);
  add("models", models.map(([k, v]) => `${k}: ${v}`).join(" · "));
  const timings = Object.entries(answer.timings || {});
  add("timings", timings.map(([k, v]) => `${k} ${Number(v).toFixed(3)} s`).join(" · "));
  const usage = Object.entries(answer.usage || {});
  if (usage.length) add("tokens", usage.map(([k, v]) => `${k} ${v}`).join(" · "));
  if (answer.turns) add("model turns", String(answer.turns));
  add("model error", answer.llm_error);

  const tools = el("ol", { class: "tools" });
  for (const step of answer.trace || []) {
    const args = JSON.stringify(step.args || {});
    const line = `${step.tool}(${args}) → ${(step.results || []).length} results · ${Number(step.seconds).toFixed(3)} s`;
    tools.append(
      el(
        "li",
        { class: step.error ? "error" : null },
        el("span", { text: step.turn ? `turn ${step.turn}: ` : "" }),
        el("code", { text: line }),
        step.from_text ? el("span", { class: "muted", text: " (written as text)" }) : null,
        step.observation ? el("div", { class: "observation muted", text: step.observation }) : null,
      ),
    );
  }
  const calls = (answer.trace || []).length
    ? tools
    : el("p", { class: "muted", text: "No tool calls: the single-shot pipeline answered." });
  return el(
    "details",
    { class: "trace" },
    el("summary", { text: "Trace" }),
    facts,
    el("h4", { text: "Tools called" }),
    calls,
  );
}
