/* One app: its status (polled until it ends), the timeline, progress over time, the root
   cause, attempts, a sweep's elements, and the live log of a replica (server-sent events,
   followed as `torchx log -f` does). */
"use strict";

const appId = decodeURIComponent(location.pathname.slice("/app/".length));
const scheduler = new URLSearchParams(location.search).get("scheduler") || "";
const query = scheduler ? "?scheduler=" + encodeURIComponent(scheduler) : "";
const api = (kind, extra) => `/api/${kind}/${encodeURIComponent(appId)}${query}${extra ? (query ? "&" : "?") + extra : ""}`;
const MAX_LOG_LINES = 5000;
let current = null, follower = null, followed = "";
let reports = [], reportsMark = null;

function show(id, visible) { document.getElementById(id).hidden = !visible; }

function renderHeader(app, now) {
  const status = app.status;
  document.title = "torchx ui: " + (app.name || app.app_id);
  document.getElementById("title").replaceChildren((app.name || app.app_id) + " ", stateBadge(status.state));
  const submitted = (status.timeline.find((p) => p.phase === "submitted") || {}).start;
  const meta = [app.handle, "scheduler " + app.scheduler];
  if (submitted) meta.push("submitted " + age(submitted, now) + " ago");
  if (status.num_restarts) meta.push(status.num_restarts + " restarts");
  const line = document.getElementById("meta");
  line.replaceChildren(meta.join(" \u00b7 "));
  if (status.url && /^https?:/.test(status.url)) line.append(" \u00b7 ", el("a", { href: status.url, text: "scheduler's page" }));
  show("cancel", !app.terminal);
  show("retry", app.terminal && Boolean(status.array) && status.array.failed.length > 0);
  document.getElementById("waiting").textContent = printable(status.waiting ? status.waiting.line : "");
}

function renderFailure(failure, msg, state) {
  show("failure-section", Boolean(failure) || (state === "FAILED" && Boolean(msg)));
  const box = document.getElementById("failure");
  if (!failure) { box.textContent = printable(msg || ""); show("failure-log", false); return; }
  const words = failure.words;
  const where = `${failure.role}[${failure.replica_id}]` + (failure.rank !== null ? `, rank ${failure.rank}` : "");
  const said = failure.message && failure.message !== words ? el("div", { text: failure.message }) : null;
  box.replaceChildren(el("strong", { text: where + ": " + words }), said);
  // the failing rank's own traceback first: the log's last lines may be another rank's
  const traceback = document.getElementById("failure-traceback");
  traceback.textContent = printable(failure.traceback || "");
  traceback.hidden = !failure.traceback;
  const tail = document.getElementById("failure-log");
  tail.textContent = (failure.log_tail || []).map(printable).join("\n");
  tail.hidden = !(failure.log_tail || []).length;
}

function renderTimeline(phases, now) {
  show("timeline-section", phases.length > 0);
  if (!phases.length) return;
  const start = Math.min(...phases.map((p) => p.start));
  const end = Math.max(...phases.map((p) => (p.end === null ? now : p.end)), start + 1);
  const span = end - start;
  document.getElementById("timeline").replaceChildren(...phases.map((p) => {
    const until = p.end === null ? now : p.end;
    const seg = el("div", { class: "seg seg-" + p.phase, title: p.detail || p.phase,
      style: `left:${(100 * (p.start - start) / span).toFixed(2)}%;width:${(100 * (until - p.start) / span).toFixed(2)}%` });
    const took = p.phase === "submitted" || p.phase === "finished" ? "" : duration(until - p.start) + (p.end === null ? "+" : "");
    return el("div", { class: "row", "data-phase": p.phase }, [
      el("span", { text: p.phase.replace("_", " ") + (p.detail ? " *" : ""), title: p.detail || "" }),
      el("div", { class: "track" }, [seg]), el("span", { class: "muted", text: took }),
    ]);
  }));
}

function chart(name, points) {
  const width = 300, height = 110, pad = 6;
  const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1), y0 = Math.min(...ys), y1 = Math.max(...ys, y0 + 1e-12);
  const coords = points.map(([x, y]) => [pad + (width - 2 * pad) * (x - x0) / (x1 - x0), height - pad - (height - 2 * pad) * (y - y0) / (y1 - y0)]);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", width); svg.setAttribute("height", height); svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", name + " over steps");
  const line = document.createElementNS(svg.namespaceURI, "polyline");
  line.setAttribute("points", coords.map((c) => c[0].toFixed(1) + "," + c[1].toFixed(1)).join(" "));
  line.setAttribute("fill", "none"); line.setAttribute("stroke", "#2f80ed"); line.setAttribute("stroke-width", "2");
  svg.append(line);
  const last = points[points.length - 1];
  return el("div", { class: "chart", "data-metric": name }, [
    el("div", { text: `${name}: ${formatNumber(last[1])} at step ${last[0]}` }), svg,
    el("div", { class: "muted", text: `min ${formatNumber(y0)} \u00b7 max ${formatNumber(y1)} \u00b7 ${points.length} reports` }),
  ]);
}

function renderProgress(progress, reports) {
  show("progress-section", Boolean(progress) || reports.length > 0);
  document.getElementById("progress").replaceChildren(progressCell(progress) || "");
  // metric names are a job's data: a Map, never an object's keys ("constructor", "__proto__")
  const series = new Map();
  for (const report of reports) {
    for (const [key, value] of Object.entries(report.metrics || {})) {
      const number = Number(value); // NaN and the infinities come as strings
      if (Number.isFinite(number)) {
        if (!series.has(key)) series.set(key, []);
        series.get(key).push([report.step, number]);
      }
    }
  }
  const steps = reports.map((r) => [r.step, r.step]);
  const charts = Array.from(series.entries()).slice(0, 8).map(([key, points]) => chart(key, points));
  if (!charts.length && steps.length > 1) charts.push(chart("step", reports.map((r) => [r.time || 0, r.step])));
  document.getElementById("charts").replaceChildren(...charts);
}

function rows(tableId, items) {
  document.querySelector(`#${tableId} tbody`).replaceChildren(...items.map((cells) =>
    el("tr", {}, cells.map((cell) => el("td", {}, [cell])))));
}

function renderTables(status) {
  const replicas = [];
  for (const role of status.roles) {
    for (const r of role.replicas) replicas.push([role.role, String(r.id), stateBadge(r.state), r.hostname || ""]);
  }
  rows("replicas", replicas);
  const attempts = status.attempts || [];
  show("attempts-section", attempts.length > 0);
  rows("attempts", attempts.map((a) => [String(a.attempt), stateBadge(a.state),
    a.start && a.end ? duration(a.end - a.start) : "", a.words || ""]));
  const array = status.array;
  show("array-section", Boolean(array));
  if (array) {
    const counts = Object.entries(array.states).map(([s, n]) => `${n} ${s.toLowerCase()}`).join(", ");
    document.getElementById("array-line").textContent = printable(`${array.size} elements: ${counts}` + (array.failed.length ? `; failed: ${array.failed.join(", ")}` : ""));
    const args = (a) => Array.isArray(a) ? a.join(" ") : Object.entries(a || {}).map(([k, v]) => k + "=" + v).join(", ");
    const role = status.roles.length ? status.roles[0].role : "";
    rows("elements", array.elements.map((e) => [String(e.index), args(e.args), stateBadge(e.state),
      el("a", { href: "#log", class: "element-log", "data-replica": role + "/" + e.index, text: "log" })]));
  }
  const select = document.getElementById("log-replica");
  const options = status.roles.flatMap((role) => role.replicas.map((r) => role.role + "/" + r.id));
  if (options.join() !== Array.from(select.options).map((o) => o.value).join()) {
    const keep = select.value;
    select.replaceChildren(...options.map((o) => el("option", { value: o, text: o })));
    if (options.includes(keep)) select.value = keep;
    else if (status.failure) select.value = status.failure.role + "/" + status.failure.replica_id;
  }
  if (select.value && select.value !== followed) follow(select.value);
}

function follow(replica) {
  if (follower) follower.close();
  followed = replica;
  const [role, k] = [replica.slice(0, replica.lastIndexOf("/")), replica.slice(replica.lastIndexOf("/") + 1)];
  const log = document.getElementById("log"), state = document.getElementById("log-state");
  log.textContent = "";
  delete log.dataset.ended;
  log.dataset.lines = "0";
  state.textContent = "following";
  let lines = [];
  follower = followEvents(api("log", `role=${encodeURIComponent(role)}&replica=${k}`), {
    lines: (data) => {
      const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      lines = lines.concat(JSON.parse(data).map(printable)).slice(-MAX_LOG_LINES);
      log.textContent = lines.join("\n");
      if (atEnd) log.scrollTop = log.scrollHeight;
      log.dataset.lines = String(lines.length);
    },
    failed: (data) => { state.textContent = printable("cannot read the log: " + JSON.parse(data)); },
    end: () => { follower.close(); state.textContent = "the log ended"; log.dataset.ended = "1"; },
    error: () => { if (!log.dataset.ended) state.textContent = "disconnected"; },
  });
}

async function refresh() {
  const banner = document.getElementById("banner");
  try {
    const app = await getJson(api("app"));
    // the reports are read from the log: again only when a new one came (or the app ended)
    const mark = JSON.stringify([app.status.progress && app.status.progress.step, app.terminal]);
    if (mark !== reportsMark) {
      reports = (await getJson(api("progress")).catch(() => ({ reports }))).reports;
      reportsMark = mark;
    }
    const now = Date.now() / 1000;
    current = app;
    banner.hidden = true;
    renderHeader(app, now);
    renderProgress(app.status.progress, reports);
    renderFailure(app.status.failure, app.status.msg, app.status.state);
    renderTimeline(app.status.timeline, now);
    renderTables(app.status);
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = String((Number(document.body.dataset.loaded) || 0) + 1);
    document.body.dataset.state = app.status.state;
    if (app.terminal) return; // it will not change any more
  } catch (error) {
    banner.textContent = printable("cannot read this app: " + error.message);
    banner.hidden = false;
  }
  setTimeout(refresh, 3000);
}

document.getElementById("cancel").addEventListener("click", async () => {
  if (!current || !confirm(`Cancel ${current.handle}? Its replicas are stopped.`)) return;
  const answer = await postJson(api("cancel"));
  const body = answer.body;
  const banner = document.getElementById("banner");
  banner.textContent = printable(answer.ok ? "cancel requested: " + body.cancelled : "cancel failed: " + (body.error || answer.statusText));
  banner.hidden = false;
});
document.getElementById("retry").addEventListener("click", async () => {
  const failed = current && current.status.array ? current.status.array.failed : [];
  if (!failed.length || !confirm(`Submit the ${failed.length} failed elements of ${current.handle} again (${failed.join(", ")})? They run as a new app.`)) return;
  const answer = await postJson(api("retry"));
  const body = answer.body;
  const banner = document.getElementById("banner");
  if (answer.ok) {
    const link = "/app/" + encodeURIComponent(body.app_id) + query;
    banner.replaceChildren("retry submitted: ", el("a", { href: link, text: body.handle }));
  } else {
    banner.textContent = printable("retry failed: " + (body.error || answer.statusText));
  }
  banner.hidden = false;
});
// an element's log link follows its replica (the select names it by the element's index)
document.getElementById("elements").addEventListener("click", (event) => {
  const link = event.target.closest("a.element-log");
  if (!link) return;
  const select = document.getElementById("log-replica");
  select.value = link.dataset.replica;
  follow(link.dataset.replica);
});
document.getElementById("log-replica").addEventListener("change", (event) => follow(event.target.value));
refresh();
