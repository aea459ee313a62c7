// The pit boss's page: open irregularities and their resolutions (each confirmed, with a
// reason), the rounds, the devices and metrics, the camera's latest frame.
"use strict";
let me = null;
let target = null;     // the result a correction refers to: {round, seq}
const TITLES = {resume: "Resume the round", void_round: "Void the round",
                manual_card: "Enter the unreadable card", pause: "Pause the table",
                dealer_error: "Report a dealer error", no_spin: "Declare a no-spin",
                supervisor_decision: "Decide after the dealer error",
                manual_number: "Enter the winning number", correct_result: "Correct a result"};
// when each action makes sense (the table checks again): v is the latest view
const ROULETTE = (v) => v.snapshot.game === "roulette";
const HAS_ERROR = (v) => v.irregularities.some((i) => i.code === "dealer_error");
const WHEN = {
  pause: (v) => !v.paused,
  resume: (v) => !!v.paused && !HAS_ERROR(v),
  void_round: (v) => !!v.paused,
  manual_card: (v) => !!v.paused && !ROULETTE(v),
  dealer_error: (v) => !ROULETTE(v) && !!v.snapshot.round && !HAS_ERROR(v),
  supervisor_decision: HAS_ERROR,
  no_spin: (v) => ROULETTE(v) && !!v.snapshot.round,
  manual_number: (v) => ROULETTE(v) && !!v.snapshot.round,
};
const ONLY = {no_spin: "wheel", manual_number: "wheel", manual_card: "cards",
              dealer_error: "cards", supervisor_decision: "cards"};
const may = (action) => !!(me && me.actions && me.actions[action]);

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
  document.querySelector("#history tbody").replaceChildren(...v.history.map((h) => {
    const tr = row([String(h.round), h.ended, h.summary || "", (h.ts || "").slice(11, 19)]);
    tr.dataset.round = h.round;
    if (h.corrected) tr.children[2].appendChild(DS.el("div", "corrected", `corrected: ${h.corrected}`));
    const td = DS.el("td", "rowacts");
    if (me && me.role === "supervisor") {
      const a = DS.el("a", "export", "export");    // the JSON of dealer-station export --round N
      a.href = `/api/export?round=${h.round}`;
      a.download = `${v.table}-round-${h.round}.json`;
      td.appendChild(a);
    }
    if (h.ended === "result" && may("correct_result")) {
      const b = DS.el("button", "correct", "Correct");
      b.type = "button";
      b.addEventListener("click", () => ask("correct_result", {round: h.round, seq: h.seq}));
      td.appendChild(b);
    }
    tr.appendChild(td);
    return tr;
  }));
  document.querySelector("#devtable tbody").replaceChildren(...Object.entries(v.devices).map(
    ([name, d]) => row([name, d.state || "", Object.entries(d).filter(([k]) => k !== "state")
      .map(([k, x]) => `${k}: ${typeof x === "object" ? JSON.stringify(x) : x}`).join(", ")])));
  document.getElementById("actions").replaceChildren(...v.actions.map((a) => DS.el("li", "",
    `${new Date(a.at * 1000).toLocaleTimeString()} ${a.by} (${a.role}): ${a.type}` +
    `${a.reason ? ` \u2014 ${a.reason}` : ""} \u2192 ${a.status}${a.code ? ` (${a.code})` : ""}`)));
  document.querySelectorAll("[data-action]").forEach((b) => {
    const a = b.dataset.action;
    b.hidden = !may(a) || (a in ONLY && ONLY[a] !== (ROULETTE(v) ? "wheel" : "cards"));
    b.disabled = !may(a) || !WHEN[a](v);
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

function ask(action, on) {
  const d = document.getElementById("confirm");
  target = on || null;
  const fields = me.actions[action].fields;
  const roulette = DS.view && ROULETTE(DS.view);
  document.getElementById("ctitle").textContent = TITLES[action];
  document.getElementById("cwhat").textContent = target ?
    `Round ${target.round}: the result published as event ${target.seq}. The correction is a new ` +
    "event that refers to it; the original stays." : "";
  document.querySelectorAll("#confirm [data-field]").forEach((l) => {
    const f = l.dataset.field;
    // a card game's result follows from its cards: corrected by a void only
    l.hidden = !fields.includes(f) || (action === "correct_result" && f === "number" && !roulette);
  });
  for (const id of ["creason", "ccard", "cnumber"]) document.getElementById(id).value = "";
  const voided = document.getElementById("cvoid");
  voided.checked = action === "correct_result" && !roulette;
  voided.disabled = action === "correct_result" && !roulette;
  d.dataset.action = action;
  d.showModal();
}

function body(action) {
  const val = (id) => document.getElementById(id).value.trim();
  const b = {type: action};
  if (val("creason")) b.reason = val("creason");
  if (action === "manual_card") b.card = val("ccard");
  if (action === "manual_number") b.number = Number(val("cnumber"));
  if (action === "dealer_error") b.error = val("cerror");
  if (action === "supervisor_decision") b.decision = val("cdecision");
  if (action === "correct_result") {
    Object.assign(b, target);
    if (document.getElementById("cvoid").checked) b.void = true;
    else b.number = Number(val("cnumber"));
  }
  return b;
}

function complete(action) {   // what the dialog still needs before it may be sent
  const val = (id) => document.getElementById(id).value.trim();
  if (me.actions[action].reason && !val("creason")) return false;
  if (action === "manual_card" && !val("ccard")) return false;
  const number = action === "manual_number" ||
    (action === "correct_result" && !document.getElementById("cvoid").checked);
  return !number || val("cnumber") !== "";
}

async function send(action) {
  const r = await DS.post("/api/command", body(action), me && me.csrf);
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
    n.textContent = "A dealer account: you can pause, report a dealer error or declare a " +
      "no-spin; resolving needs a supervisor.";
  }
  document.querySelectorAll("[data-action]").forEach((b) =>
    b.addEventListener("click", () => ask(b.dataset.action)));
  document.getElementById("ccancel").addEventListener("click", () =>
    document.getElementById("confirm").close());
  document.getElementById("confirmform").addEventListener("submit", (ev) => {
    const d = document.getElementById("confirm");
    if (!complete(d.dataset.action)) { ev.preventDefault(); return; }
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
