// The page's start: the key dialog, the server's health line (and the note that no language model writes the
// answers, when none does), the three panels, the first-visit hint, and `/?q=QUESTION` (ask at once).

import { forgetKey, setKeyPrompt, storedKey } from "./api.js";
import { Chat } from "./chat.js";
import { $ } from "./dom.js";
import { Hint } from "./hint.js";
import { PapersPanel } from "./papers.js";
import { Viewer } from "./viewer.js";

/** Ask for the API key in the page's dialog; the key, or null when the user cancels. */
function promptForKey(reason) {
  const dialog = $("key-dialog");
  const input = $("key-input");
  $("key-reason").textContent = reason || "This server asks for an API key.";
  input.value = "";
  return new Promise((resolve) => {
    const done = (key) => {
      dialog.removeEventListener("close", onClose);
      $("key-cancel").removeEventListener("click", onCancel);
      if (dialog.open) dialog.close();
      resolve(key);
    };
    const onClose = () => done(dialog.returnValue === "ok" && input.value.trim() ? input.value.trim() : null);
    const onCancel = () => {
      dialog.returnValue = "";
      dialog.close();
    };
    dialog.addEventListener("close", onClose);
    $("key-cancel").addEventListener("click", onCancel);
    dialog.returnValue = "";
    dialog.showModal();
    input.focus();
  }).then((key) => {
    updateKeyButton(key);
    return key;
  });
}

function updateKeyButton(key) {
  $("forget-key").hidden = !(key || storedKey());
}

async function showHealth() {
  try {
    const health = await (await fetch("/healthz")).json();
    $("health").textContent = health.ok
      ? `knowledge base ${health.kb} · ${health.papers} papers · ${health.embedder}`
      : `not ready: ${health.error}`;
    // Said once for the page, not under every answer: without a model, answers are extracted sentences.
    $("model-note").hidden = !(health.ok && health.llm === false);
  } catch (error) {
    $("health").textContent = `the server does not answer: ${error.message}`;
  }
}

async function start() {
  setKeyPrompt(promptForKey);
  updateKeyButton();
  $("forget-key").addEventListener("click", () => {
    forgetKey();
    updateKeyButton();
  });
  const hint = new Hint({ onPick: (question) => chat.fill(question) });
  const papers = new PapersPanel({ onOpen: (paper) => viewer.showPaper(paper), onChange: (rows) => hint.papers(rows) });
  const viewer = new Viewer({ papers });
  const chat = new Chat({
    onCite: (source, claim) => (claim ? viewer.showClaim(claim, source.title) : viewer.showSource(source)),
    onEmpty: (empty) => hint.conversationEmpty(empty),
  });
  showHealth();
  await papers.refresh();
  const question = new URLSearchParams(window.location.search).get("q");
  if (question && question.trim()) await chat.ask(question);
}

start();
