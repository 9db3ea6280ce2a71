// Showing an answer's text as it comes. A model's pieces are shown as they arrive; an answer written at once
// (sentences extracted from the papers, no model: one `token` event marked `whole`) is revealed a few words at a
// time, so that the page reads the same either way: WORD_MS a word, in at most REVEAL_MS whatever its length.

import { textNode } from "./dom.js";

const STEP_MS = 30;
const WORD_MS = 40;
const REVEAL_MS = 1500;

export class Reveal {
  /** node: where the text goes; around(show): called to show each piece (show() appends it), e.g. to keep the
   * newest text in view. */
  constructor(node, around = (show) => show()) {
    this.node = node;
    this.around = around;
    this.queue = []; // words waiting to be shown
    this.total = 0; // words of this reveal, shown and waiting
    this.started = 0;
    this.timer = null;
    this.drained = null; // {promise, resolve} while words wait
    // A reader who asks for less motion gets the text at once.
    this.instant = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  /** A piece of the answer; `whole`: the answer written at once, to be revealed gradually. */
  push(text, whole = false) {
    if (!text) return;
    if (!whole || this.instant || document.hidden) {
      this.flush(); // what waited comes first: the order of the text is kept
      this.show(text);
      return;
    }
    const words = text.match(/\S+\s*|\s+/g) || [];
    if (!this.timer) {
      this.total = 0;
      this.started = performance.now();
    }
    this.queue.push(...words);
    this.total += words.length;
    if (!this.drained) {
      let resolve;
      const promise = new Promise((r) => (resolve = r));
      this.drained = { promise, resolve };
    }
    if (!this.timer) this.timer = setInterval(() => this.step(), STEP_MS);
  }

  step() {
    // By the clock, not by the tick: a tab in the background ticks once a second, and its reader should not wait.
    const span = Math.min(REVEAL_MS, this.total * WORD_MS);
    const due = Math.ceil(((performance.now() - this.started) / span) * this.total);
    const shown = this.total - this.queue.length;
    this.show(this.queue.splice(0, Math.max(1, due - shown)).join(""));
    if (!this.queue.length) this.stop();
  }

  show(text) {
    if (!text) return;
    this.around(() => this.node.append(textNode(text)));
  }

  /** Show at once whatever waits. */
  flush() {
    if (this.queue.length) this.show(this.queue.splice(0).join(""));
    this.stop();
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
    if (this.drained) this.drained.resolve();
    this.drained = null;
  }

  /** Resolves once every piece is shown. */
  async done() {
    if (this.drained) await this.drained.promise;
  }
}
