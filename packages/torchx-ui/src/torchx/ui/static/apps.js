/* The apps page: every app of every configured scheduler, filtered in the page, and
   refreshed by polling /api/apps (each scheduler is listed on the server in its own
   thread: one that is down or slow shows as such and holds nothing up). */
"use strict";

const filters = {
  scheduler: document.getElementById("f-scheduler"),
  state: document.getElementById("f-state"),
  name: document.getElementById("f-name"),
};
let latest = null;

function readFilters() {
  const query = new URLSearchParams(location.search);
  filters.state.value = query.get("state") || "";
  filters.name.value = query.get("name") || "";
  filters.scheduler.dataset.wanted = query.get("scheduler") || "";
}

function writeFilters() {
  const query = new URLSearchParams();
  for (const [key, input] of Object.entries(filters)) if (input.value) query.set(key, input.value);
  const search = query.toString();
  history.replaceState(null, "", location.pathname + (search ? "?" + search : ""));
}

function globToRegExp(text) {
  const escaped = text.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(/[*?]/.test(text) ? "^" + escaped + "$" : escaped, "i");
}

function matches(app) {
  if (filters.scheduler.value && app.scheduler !== filters.scheduler.value) return false;
  if (filters.state.value && app.state !== filters.state.value) return false;
  if (filters.name.value) {
    const wanted = globToRegExp(filters.name.value);
    if (!wanted.test(app.name) && !wanted.test(app.app_id)) return false;
  }
  return true;
}

function detailCell(app) {
  const cell = el("td", { class: "detail", role: "cell" });
  if (app.waiting) {
    // a scheduler's reason is a word (Slurm's "Resources") or already a sentence (Ray's)
    const said = /^waiting\b/i.test(app.waiting) ? app.waiting : "waiting for: " + app.waiting;
    cell.append(el("div", { class: "waiting", text: said }));
  }
  const progress = progressCell(app.progress);
  if (progress) cell.append(progress);
  if (app.failure) cell.append(el("div", { class: "failure", text: app.failure }));
  return cell;
}

function appRow(app, now) {
  const link = "/app/" + encodeURIComponent(app.app_id) + "?scheduler=" + encodeURIComponent(app.scheduler);
  // the table is laid out as a grid (ui.css): the roles keep it a table for screen readers
  return el("tr", { role: "row", "data-handle": app.handle, "data-state": app.state, "data-scheduler": app.scheduler }, [
    el("td", { class: "name", role: "cell" }, [el("a", { href: link, text: app.name || app.app_id })]),
    el("td", { class: "handle", role: "cell", text: app.handle }),
    el("td", { class: "scheduler", role: "cell", text: app.scheduler }),
    el("td", { class: "state-cell", role: "cell" }, [stateBadge(app.state)]),
    el("td", { class: "age", role: "cell", text: age(app.submitted, now) }),
    detailCell(app),
  ]);
}

function renderSchedulers(schedulers) {
  const strip = document.getElementById("schedulers");
  strip.replaceChildren(...schedulers.map((s) => {
    const text = s.state === "ok" ? `${s.name}: ${s.apps} apps` : `${s.name}: ${s.state}` + (s.error ? ": " + s.error : "");
    return el("span", { class: "sched sched-" + s.state.replace(" ", "-"), "data-scheduler": s.name, "data-state": s.state, text });
  }));
  const select = filters.scheduler, wanted = select.value || select.dataset.wanted;
  const names = schedulers.map((s) => s.name);
  if (select.options.length - 1 !== names.length) {
    select.replaceChildren(el("option", { value: "", text: "all" }), ...names.map((n) => el("option", { text: n })));
  }
  if (wanted && names.includes(wanted)) select.value = wanted;
}

function render() {
  if (!latest) return;
  const started = performance.now();
  const apps = latest.apps.filter(matches).sort((a, b) => (b.submitted || 0) - (a.submitted || 0));
  const body = document.createDocumentFragment();
  for (const app of apps) body.append(appRow(app, latest.now));
  document.querySelector("#apps tbody").replaceChildren(body);
  document.getElementById("count").textContent = `${apps.length} of ${latest.apps.length} apps`;
  document.getElementById("updated").textContent = "updated " + new Date(latest.now * 1000).toLocaleTimeString();
  document.body.dataset.rows = String(apps.length);
  document.body.dataset.renderMs = String(Math.round(performance.now() - started));
}

async function poll() {
  const banner = document.getElementById("banner");
  try {
    latest = await getJson("/api/apps");
    banner.hidden = true;
    renderSchedulers(latest.schedulers);
    render();
    document.body.dataset.loaded = String((Number(document.body.dataset.loaded) || 0) + 1);
  } catch (error) {
    banner.textContent = printable("torchx ui is not answering (" + error.message + "); retrying");
    banner.hidden = false;
  }
  setTimeout(poll, ((latest && latest.refresh_s) || 3) * 1000);
}

readFilters();
for (const input of Object.values(filters)) input.addEventListener("input", () => { writeFilters(); render(); });
poll();
