// Building the page's elements. Text from papers and models only ever goes in as text nodes (textContent),
// never as markup: a title or an answer holding "<script>" or a link shows those characters, nothing more.
// Bidi embeddings, overrides and isolates in that text would reorder what the reader sees (a title ending in
// "\u202egnp.exe" shows as "exe.png"): they are shown as their escapes, as the terminal shows them.

const BIDI = /[\u202a-\u202e\u2066-\u2069]/g;

/** `value` as text, its bidi controls made visible (`\u202e`). */
export function visible(value) {
  return String(value).replace(BIDI, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A text node of `value` (see `visible`). */
export function textNode(value) {
  return document.createTextNode(visible(value));
}

/**
 * el("li", {class: "x", text: "shown as text", title: "...", dataset: {n: "1"}, on: {click: fn}}, child, ...)
 * Children are elements or strings (strings become text nodes).
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = visible(value);
    else if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "on") for (const [type, fn] of Object.entries(value)) node.addEventListener(type, fn);
    else if (name === "hidden") node.hidden = Boolean(value);
    else node.setAttribute(name, value === true ? "" : visible(value)); // a title attribute shows as a tooltip
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : textNode(child));
  }
  return node;
}

export function $(id) {
  return document.getElementById(id);
}

/** Show `message` in an error element, or hide it when message is empty. */
export function showError(node, message) {
  node.textContent = visible(message || "");
  node.hidden = !message;
}

/** "p. 3" or "pp. 3–5". */
export function pagesLabel(first, last) {
  return last && last !== first ? `pp. ${first}–${last}` : `p. ${first}`;
}
