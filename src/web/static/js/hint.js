// The first-visit hint: while the conversation is empty, two example questions made from the papers held (a
// click puts one in the question box, to ask as it is or edit), or, with no paper yet, how to add some.

import { $, el } from "./dom.js";

// Words too common in titles to make a topic of.
const COMMON = new Set(
  ("about across after against among analysis and approach based beyond between from into language large learning " +
    "method methods model models more network networks only over paper study systems than that their these this " +
    "through toward towards under using what when where which with without").split(" "),
);

/** What a paper is called in a question: its short name before a colon ("FlashRank: Cheap ..."), else its title. */
export function shortTitle(title) {
  const text = String(title || "").trim();
  const head = text.split(/:\s/)[0].trim();
  return head.length >= 3 && head.length < text.length ? head : text;
}

/** The word of the titles most papers share (at least two), or null: the topic of a question across papers. */
function sharedTopic(titles) {
  const seen = new Map(); // word -> how many titles hold it (first seen first among equals)
  for (const title of titles) {
    const words = new Set(String(title).toLocaleLowerCase().match(/[\p{L}][\p{L}-]{4,}/gu) || []);
    for (const word of words) if (!COMMON.has(word)) seen.set(word, (seen.get(word) || 0) + 1);
  }
  let best = null;
  for (const [word, n] of seen) if (n >= 2 && (!best || n > seen.get(best))) best = word;
  return best;
}

/** Two example questions about these papers (ready ones only), or [] when none is ready. */
export function exampleQuestions(rows) {
  const ready = rows.filter((row) => row.status === "ready" && row.title);
  if (!ready.length) return [];
  const [first, second] = ready;
  const questions = [`What does ${shortTitle(first.title)} propose?`];
  const topic = sharedTopic(ready.map((row) => row.title));
  if (topic) questions.push(`What do the papers say about ${topic}?`);
  else if (second) questions.push(`How does ${shortTitle(first.title)} compare with ${shortTitle(second.title)}?`);
  else questions.push(`What are the limitations of ${shortTitle(first.title)}?`);
  return questions;
}

export class Hint {
  /** onPick(question): what a click on an example does (fill the question box). */
  constructor({ onPick }) {
    this.onPick = onPick;
    this.node = $("hint");
    this.rows = null; // the papers, once listed
    this.empty = true; // the conversation holds no message
  }

  /** The papers listed (GET /v1/documents rows). */
  papers(rows) {
    this.rows = rows;
    this.render();
  }

  /** Whether the conversation is empty: the hint shows only then. */
  conversationEmpty(empty) {
    this.empty = empty;
    this.render();
  }

  render() {
    this.node.hidden = !this.empty || this.rows === null;
    if (this.node.hidden) return;
    const questions = exampleQuestions(this.rows);
    if (!questions.length) {
      const text = this.rows.length
        ? "Your papers are being read: example questions come once one is ready."
        : "No papers yet: upload a PDF with “Upload papers…”, then ask about it.";
      this.node.replaceChildren(el("p", { class: "hint-lead", text }));
      return;
    }
    // Titles are the papers' text: the buttons hold them as text, never markup.
    const buttons = questions.map((question) =>
      el("li", {}, el("button", { type: "button", class: "link hint-question", text: question, on: { click: () => this.onPick(question) } })),
    );
    this.node.replaceChildren(
      el("p", { class: "hint-lead", text: "Ask a question of your papers, for example:" }),
      el("ul", { class: "hint-questions" }, ...buttons),
      el("p", { class: "muted hint-more", text: "Answers cite the passages they rest on: click a [1] to see it on its page." }),
    );
  }
}
