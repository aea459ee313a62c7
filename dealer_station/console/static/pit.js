// The pit boss's page: open irregularities and their resolutions (each confirmed, with a
// reason), the rounds, the devices and metrics, the camera's latest frame.
"use strict";
let me = null;
const TITLES = {resume: "Resume the round", void_round: "Void the round",
                manual_card: "Enter the unreadable card", pause: "Pause the table"};

function row(cells) {
  const tr = DS.el("tr");
  cells.forEach((c) => tr.appendChild(DS.el("td", "", c)));
  return tr;
}

function irrItem(i) {
  const li = DS.el("li", "irr");
  li.dataset.code = i.code;
  li.appendChild(DS.el("b", "", i.code.replace(/_/g, " ")));
  li.appendChild(DS.el("span", "", ` round ${i.round ?? "-"} \u00b7 ${JSON.stringify(i.detail)}`));
  li.appendChild(DS.el("div", "how", i.procedure));
  return li;
}

function render(v) {
  DS.header(v);
  DS.banner(v);
  const open = document.getElementById("open");
  open.replaceChildren(...v.irregularities.map(irrItem));
  if (v.paused && !v.irregularities.length)
    open.appendChild(DS.el("li", "irr", `paused: ${v.paused}`));
  if (!v.paused) open.appendChild(DS.el("li", "none", "none: the table is playing"));
  document.getElementById("review").replaceChildren(...v.review.map(irrItem));
  document.querySelector("#history tbody").replaceChildren(...v.history.map((h) =>
    row([String(h.round), h.ended, h.summary || "", (h.ts || "").slice(11, 19)])));
  document.querySelector("#devtable tbody").replaceChildren(...Object.entries(v.devices).map(
    ([name, d]) => row([name, d.state || "", Object.entries(d).filter(([k]) => k !== "state")
      .map(([k, x]) => `${k}: ${typeof x === "object" ? JSON.stringify(x) : x}`).join(", ")])));
  document.getElementById("actions").replaceChildren(...v.actions.map((a) => DS.el("li", "",
    `${new Date(a.at * 1000).toLocaleTimeString()} ${a.by} (${a.role}): ${a.type}` +
    `${a.reason ? ` \u2014 ${a.reason}` : ""} \u2192 ${a.status}${a.code ? ` (${a.code})` : ""}`)));
  const canAct = me && me.role === "supervisor";
  document.querySelectorAll("[data-action]").forEach((b) => {
    b.disabled = !canAct || (b.dataset.action !== "pause" && !v.paused) ||
      (b.dataset.action === "pause" && !!v.paused);
  });
}

async function metrics() {
  if (!me || me.role !== "supervisor") return;
  const r = await fetch("/api/metrics");
  if (!r.ok) return;
  const m = await r.json();
  document.querySelector("#metrics tbody").replaceChildren(...Object.entries(m.figures)
    .filter(([k]) => !k.startsWith("device_up")).slice(0, 40).map(([k, x]) => row([k, String(x)])));
}

function camera() {
  if (!me || me.role !== "supervisor") return;
  const img = document.getElementById("camera");
  img.onerror = () => { document.getElementById("camsec").hidden = true; };
  img.onload = () => { document.getElementById("camsec").hidden = false; };
  img.src = `/api/camera.jpg?t=${Date.now()}`;
}

function ask(action) {
  const d = document.getElementById("confirm");
  document.getElementById("ctitle").textContent = TITLES[action];
  document.getElementById("cardrow").hidden = action !== "manual_card";
  document.getElementById("creason").value = "";
  document.getElementById("ccard").value = "";
  d.dataset.action = action;
  d.showModal();
}

async function send(action) {
  const body = {type: action, reason: document.getElementById("creason").value.trim()};
  if (action === "manual_card") body.card = document.getElementById("ccard").value.trim();
  const r = await DS.post("/api/command", body, me && me.csrf);
  const out = document.getElementById("result");
  out.className = "result " + (r.status === 200 ? "ok" : "bad");
  out.textContent = r.status === 200 ? `${action}: accepted` :
    `${action}: ${r.data.reason || r.data.error || r.status}`;
}

async function main() {
  me = await DS.session();
  if (!me) { location.href = "/login?next=/pit"; return; }
  document.getElementById("who").textContent = `${me.account} (${me.role})`;
  if (me.role !== "supervisor") {
    const n = document.getElementById("notice");
    n.hidden = false;
    n.textContent = "Supervisors only: you can watch, not resolve.";
  }
  document.querySelectorAll("[data-action]").forEach((b) =>
    b.addEventListener("click", () => ask(b.dataset.action)));
  document.getElementById("ccancel").addEventListener("click", () =>
    document.getElementById("confirm").close());
  document.getElementById("confirmform").addEventListener("submit", (ev) => {
    const d = document.getElementById("confirm");
    if (!document.getElementById("creason").value.trim()) { ev.preventDefault(); return; }
    send(d.dataset.action);
  });
  document.getElementById("logout").addEventListener("click", async () => {
    await DS.post("/api/logout", {}, me.csrf);
    location.href = "/login";
  });
  DS.connect(render);
  metrics();
  camera();
  setInterval(metrics, 2000);
  setInterval(camera, 1000);
}

main();
