// Shared by the dealer and pit pages: the live view over Server-Sent Events, the connection
// light, cards as text, and the header. Plain JS, no build step, no library.
"use strict";
const DS = {};
window.__paints = [];   // [version, event time, paint time] (ms since the epoch): bench_console.py

DS.SUITS = {s: "\u2660", h: "\u2665", d: "\u2666", c: "\u2663"};
DS.el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
};
DS.card = (c) => {           // "Ts" -> a card face; null -> a card back (face down, secret)
  if (!c) return DS.el("span", "card back", "");
  const e = DS.el("span", "card" + ("hd".includes(c[1]) ? " red" : ""),
                  (c[0] === "T" ? "10" : c[0]) + DS.SUITS[c[1]]);
  return e;
};
DS.cards = (list) => {
  const box = DS.el("div", "cards");
  (list || []).forEach((c) => box.appendChild(DS.card(c)));
  return box;
};
DS.total = (cards) => {      // a blackjack total of the visible cards (the dealer's up cards)
  let t = 0, aces = 0;
  for (const c of cards || []) {
    if (!c) continue;
    const r = c[0];
    t += r === "A" ? 1 : ("TJQK".includes(r) ? 10 : Number(r));
    if (r === "A") aces++;
  }
  return aces && t + 10 <= 21 ? t + 10 : t;
};
DS.setConn = (online) => {
  const c = document.getElementById("conn");
  c.textContent = online ? "online" : "offline";
  c.className = "conn " + (online ? "ok" : "bad");
  document.body.classList.toggle("offline", !online);
};
DS.header = (v) => {
  document.getElementById("table").textContent = `Table ${v.table} \u00b7 ${v.profile}`;
  const s = v.snapshot || {};
  const r = s.round ? s.round.round : (v.last_result ? v.last_result.round : null);
  document.getElementById("round").textContent = r ? `Round ${r}` : "No round";
  const shoe = document.getElementById("shoe");
  if (shoe) shoe.textContent = s.shoe ? `Shoe ${s.shoe.shoe}: ${s.shoe.remaining} cards left` : "";
  const flag = document.getElementById("flag");
  flag.textContent = s.phase === "shuffle_due" ? "SHUFFLE" :
    (s.shoe && s.shoe.cut_card_out) || v.last_round ? "LAST ROUND" : "";
  flag.hidden = !flag.textContent;
  const dev = document.getElementById("devices");
  dev.replaceChildren();
  // commands: the table's probe of its commands path (a broker ACL that drops them)
  for (const name of ["shoe", "camera", "wheel", "panel", "broker", "commands"]) {
    const d = (v.devices || {})[name];
    if (!d) continue;
    const ok = d.state === "connected" || d.state === "ok";
    const p = DS.el("span", "pill " + (ok ? "ok" : "bad"), `${name} ${ok ? "\u2713" : d.state}`);
    p.dataset.device = name;
    if (d.reason) p.title = d.reason;
    dev.appendChild(p);
  }
};
DS.banner = (v) => {
  const b = document.getElementById("banner");
  if (!v.paused) { b.hidden = true; b.dataset.code = ""; return; }
  const irr = v.irregularities.length ? v.irregularities[v.irregularities.length - 1] : null;
  const code = irr ? irr.code : v.paused;
  b.hidden = false;
  b.dataset.code = code;
  b.querySelector(".what").textContent = `STOP \u2014 ${code.replace(/_/g, " ")}`;
  b.querySelector(".how").textContent = irr ? irr.procedure : v.pause_procedure;
};
DS.paint = (version, at) => {   // after the frame is painted: a rAF, then the next task
  requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      window.__paints.push([version, at * 1000, performance.timeOrigin + performance.now()]);
      if (window.__paints.length > 5000) window.__paints.splice(0, 1000);
    };
    ch.port2.postMessage(0);
  });
};
DS.connect = (render) => {
  let last = 0, es = null;
  const open = () => {
    es = new EventSource("/stream");
    es.onopen = () => { last = Date.now(); DS.setConn(true); };
    es.addEventListener("ping", () => { last = Date.now(); });
    es.addEventListener("view", (ev) => {
      last = Date.now();
      DS.setConn(true);
      const v = JSON.parse(ev.data);
      DS.view = v;
      render(v);
      DS.paint(v.version, v.at);
    });
    es.onerror = () => { DS.setConn(false); };   // EventSource retries by itself
  };
  open();
  setInterval(() => {            // a silent stream (a half-open connection): start afresh
    if (Date.now() - last > 40000) { DS.setConn(false); es.close(); open(); last = Date.now(); }
  }, 5000);
  setInterval(() => { if (DS.view) DS.tick(DS.view); }, 250);
};
DS.tick = (v) => {               // the decision timer counts down between updates
  const t = document.getElementById("timer");
  if (!t) return;
  if (!v.timer) { t.textContent = ""; t.hidden = true; return; }
  const left = Math.max(0, v.timer.deadline - Date.now() / 1000);
  t.hidden = false;
  t.textContent = `${Math.ceil(left)} s`;
  t.classList.toggle("low", left < 5);
};
DS.session = async () => {
  const r = await fetch("/api/session");
  return r.ok ? r.json() : null;
};
DS.post = async (url, body, csrf) => {
  const r = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json",
                              "X-CSRF-Token": csrf || ""}, body: JSON.stringify(body)});
  let data = {};
  try { data = await r.json(); } catch (e) { /* an empty body */ }
  return {status: r.status, data};
};
