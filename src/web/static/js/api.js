// The /v1 API as the page uses it: the API key (asked once on a 401, kept in sessionStorage), JSON errors as
// ApiError, the chat's event stream read as it arrives, page images as blob: URLs (an <img src> cannot send
// the key).

const KEY_STORE = "paperscope.apiKey";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let askForKey = null; // (reason) => Promise<string | null>, set by the page
let pendingKey = null; // one question at a time, however many requests got a 401 together

/** The function that asks the user for the key (returns null when they decline). */
export function setKeyPrompt(fn) {
  askForKey = fn;
}

export function storedKey() {
  return sessionStorage.getItem(KEY_STORE);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_STORE);
}

function withKey(headers) {
  const out = new Headers(headers || {});
  const key = storedKey();
  if (key) out.set("Authorization", `Bearer ${key}`);
  return out;
}

async function errorOf(response) {
  let code = "error";
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error) {
      code = String(body.error.code || code);
      message = String(body.error.message || message);
    }
  } catch (_) {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message);
}

async function newKey(reason, triedKey) {
  if (!askForKey) return null;
  if (storedKey() && storedKey() !== triedKey) return storedKey(); // another request got a key meanwhile
  if (!pendingKey) {
    pendingKey = askForKey(reason).finally(() => {
      pendingKey = null;
    });
  }
  const key = await pendingKey;
  if (key) sessionStorage.setItem(KEY_STORE, key);
  return key;
}

/** fetch(path) with the key; a 401 asks for the key and tries again; an error status throws ApiError. */
export async function request(path, options = {}) {
  for (let attempt = 0; ; attempt += 1) {
    const tried = storedKey();
    const response = await fetch(path, { ...options, headers: withKey(options.headers) });
    if (response.status === 401 && attempt < 3) {
      const error = await errorOf(response);
      const key = await newKey(error.message, tried);
      if (key) continue;
      throw error;
    }
    if (!response.ok) throw await errorOf(response);
    return response;
  }
}

export async function getJSON(path) {
  return (await request(path)).json();
}

export async function sendJSON(method, path, body) {
  const options = { method, headers: { "content-type": "application/json" } };
  if (body !== undefined) options.body = JSON.stringify(body);
  return (await request(path, options)).json();
}

/** POST /v1/chat with stream: calls onEvent(event) for each `data:` event until `[DONE]`. */
export async function streamChat(body, onEvent) {
  const response = await request("/v1/chat", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of block.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        onEvent(JSON.parse(data));
      }
    }
  }
}

/** A page image as a blob: URL (revoke it when done) and the pixels per PDF point it was drawn at. */
export async function pageImage(docId, page, { chunk = null, span = null, width = null } = {}) {
  const query = new URLSearchParams();
  if (chunk !== null && chunk !== undefined) query.set("chunk", String(chunk));
  if (span && chunk !== null && chunk !== undefined) query.set("span", `${span[0]}-${span[1]}`);
  if (width) query.set("width", String(width));
  const path = `/v1/documents/${encodeURIComponent(docId)}/pages/${page}.png?${query}`;
  const response = await request(path);
  const scale = Number(response.headers.get("X-Paperscope-Scale")) || null;
  return { url: URL.createObjectURL(await response.blob()), scale };
}

export function pathOf(docId, ...rest) {
  return [`/v1/documents/${encodeURIComponent(docId)}`, ...rest].join("/");
}

/**
 * A paper's PDF as a blob: URL, fetched with the key (a link or a new tab cannot send it, and the key is kept out
 * of URLs). The latest one is kept: opening the same paper again does not fetch it again.
 */
let heldPdf = null; // {docId, url}
export async function pdfBlobUrl(docId) {
  if (heldPdf && heldPdf.docId === docId) return heldPdf.url;
  const response = await request(pathOf(docId, "pdf"));
  const url = URL.createObjectURL(await response.blob());
  // The tab that showed the previous one has read it by now: only the newest is kept alive.
  if (heldPdf) URL.revokeObjectURL(heldPdf.url);
  heldPdf = { docId, url };
  return url;
}
