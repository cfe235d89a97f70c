/* Helpers both pages share. Every value from a scheduler reaches the page through
   textContent (el()), never as HTML. */
"use strict";

/* A job's words are data: a control character (an escape sequence's ESC, CR, C1, a bidi
   override) is shown as \xNN or \uNNNN, as the command line shows it. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
function printable(text) {
  return String(text).replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? "\\x" + code.toString(16).padStart(2, "0") : "\\u" + code.toString(16).padStart(4, "0");
  });
}

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = printable(value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children || []) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function duration(seconds) {
  if (seconds < 10) return Math.max(0, seconds).toFixed(1) + "s";
  const whole = Math.round(seconds);
  if (whole < 60) return whole + "s";
  const minutes = Math.floor(whole / 60), secs = whole % 60;
  if (minutes < 60) return minutes + "m" + String(secs).padStart(2, "0") + "s";
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return hours + "h" + String(minutes % 60).padStart(2, "0") + "m";
  return Math.floor(hours / 24) + "d";
}

function age(submitted, now) {
  return submitted ? duration(now - submitted) : "";
}

function stateBadge(state) {
  return el("span", { class: "state state-" + state, text: state });
}

/* The bar, then the words torchx list --progress and torchx status use (from the server). */
function progressCell(progress) {
  if (!progress) return null;
  const parts = [];
  const fraction = progress.fraction;
  if (fraction !== null && fraction !== undefined) {
    parts.push(el("span", { class: "bar", role: "progressbar", "aria-valuenow": Math.round(fraction * 100) },
      [el("div", { style: "width:" + (100 * Math.min(1, Math.max(0, fraction))).toFixed(1) + "%" })]));
  }
  parts.push(progress.cell);
  const node = el("span", { class: "progress" }, parts);
  if (progress.metrics_line) node.append(el("div", { class: "metrics", text: progress.metrics_line }));
  return node;
}

function formatNumber(value) {
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return String(value);
  return Math.abs(value) >= 100 ? value.toFixed(1) : value.toPrecision(3);
}

/* The token: taken from the address `torchx ui` printed (?token=, or #token= from the page
   that opened the browser), kept in this origin's storage (per port, unlike a cookie)
   and sent in a header with every request; the address bar no longer shows it. */
const TOKEN_KEY = "torchx_ui_token";

function takeTokenFromUrl() {
  const url = new URL(location.href);
  const given = url.searchParams.get("token") || new URLSearchParams(url.hash.slice(1)).get("token");
  if (!given) return;
  localStorage.setItem(TOKEN_KEY, given);
  url.searchParams.delete("token");
  history.replaceState(null, "", url.pathname + url.search);
}
takeTokenFromUrl();

function authHeaders() {
  const token = localStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: "token " + token } : {};
}

async function getJson(path) {
  const answer = await fetch(path, { headers: authHeaders(), cache: "no-store" });
  const body = await answer.json().catch(() => ({ error: answer.statusText }));
  if (!answer.ok) throw new Error(body.error || answer.statusText);
  return body;
}

async function postJson(path) {
  const answer = await fetch(path, { method: "POST", headers: authHeaders(), cache: "no-store" });
  const body = await answer.json().catch(() => ({ error: answer.statusText }));
  return { ok: answer.ok, body, statusText: answer.statusText };
}

/* Server-sent events read with fetch, which can send the token's header (EventSource
   cannot). `on` maps an event's name to a function of its data; on.error(message) when
   the stream cannot be read or breaks off. Returns { close() }. */
function followEvents(path, on) {
  const controller = new AbortController();
  (async () => {
    const answer = await fetch(path, { headers: authHeaders(), cache: "no-store", signal: controller.signal });
    if (!answer.ok || !answer.body) {
      const body = await answer.json().catch(() => ({}));
      throw new Error(body.error || answer.statusText);
    }
    const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        if (on[name]) on[name](data.join("\n"));
      }
    }
    throw new Error("the stream ended");
  })().catch((error) => { if (!controller.signal.aborted && on.error) on.error(error.message); });
  return { close: () => controller.abort() };
}
