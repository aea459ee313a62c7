// The dealer's monitor: the table drawn from above, the next card's place lit, each place's
// cards and totals, the decision awaited and its timer, and a full-width banner when stopped.
// Built only from the published view: the hole card is a card back until it is revealed.
"use strict";

function place(id, label) {
  const p = DS.el("div", "place");
  p.dataset.place = id;
  p.appendChild(DS.el("div", "label", label));
  return p;
}

function handBox(h, i, multi) {
  const box = DS.el("div", "hand");
  box.dataset.hand = i;
  box.appendChild(DS.cards(h.cards));
  const state = h.outcome || (h.done ? "done" : "");
  box.appendChild(DS.el("div", "total", `${h.total}${h.soft ? " soft" : ""}` +
                        (h.doubled ? " \u00d72" : "") + (state ? ` \u00b7 ${state}` : "")));
  if (multi) box.prepend(DS.el("div", "sub", `hand ${i + 1}`));
  return box;
}

function blackjack(v, layout) {
  const s = v.snapshot;
  const r = s.round || null;
  const res = !r ? v.last_result : null;
  const dealer = place("dealer", "Dealer");
  const dcards = r ? r.dealer : res ? res.dealer.cards : [];
  dealer.appendChild(DS.cards(dcards));
  if (dcards.length) {
    const hidden = dcards.some((c) => !c);
    dealer.appendChild(DS.el("div", "total", res ? (res.dealer.blackjack ? "blackjack" :
      `${res.dealer.total}${res.dealer.bust ? " bust" : ""}`) :
      `${DS.total(dcards)}${hidden ? " + ?" : ""}`));
  }
  layout.appendChild(dealer);
  const seats = {};
  for (const st of (r ? r.seats : res ? res.seats : [])) seats[st.seat] = st;
  const arc = DS.el("div", "arc");
  for (let n = 1; n <= 7; n++) {
    const p = place(`seat-${n}`, `Seat ${n}`);
    const st = seats[n];
    if (!st) p.classList.add("empty");
    else st.hands.forEach((h, i) => p.appendChild(handBox(h, i, st.hands.length > 1)));
    p.style.setProperty("--i", n - 1);
    arc.appendChild(p);
  }
  layout.appendChild(arc);
}

function baccarat(v, layout) {
  const r = v.snapshot.round;
  const res = !r ? v.last_result : null;
  const row = DS.el("div", "bac");
  for (const side of ["player", "banker"]) {
    const p = place(side, side === "player" ? "Player" : "Banker");
    const cards = r ? r[side] : res ? res[side].cards : [];
    p.appendChild(DS.cards(cards));
    if (cards.length) p.appendChild(DS.el("div", "total", String(
      res ? res[side].total : cards.reduce((t, c) => t + (c[0] === "A" ? 1 :
        "TJQK".includes(c[0]) ? 0 : Number(c[0])), 0) % 10)));
    if (res && res.winner === side) p.classList.add("won");
    row.appendChild(p);
  }
  layout.appendChild(row);
  if (res) layout.appendChild(DS.el("div", "result", res.winner === "tie" ? "Tie" :
                                    `${res.winner} wins${res.natural ? " (natural)" : ""}`));
}

function roulette(v, layout) {
  const res = v.last_result;
  const p = place("wheel", v.snapshot.round ? "Spinning — last number" : "Winning number");
  const n = DS.el("div", "number " + (res ? (res.colour || "green") : "none"),
                  res ? String(res.number) : "\u2014");
  p.appendChild(n);
  if (res && res.colour) p.appendChild(DS.el("div", "total", res.colour));
  layout.appendChild(p);
  const last = DS.el("div", "history");
  v.history.slice(0, 12).forEach((h) => last.appendChild(DS.el("span", "past", h.summary)));
  layout.appendChild(last);
}

function next(v) {
  const w = v.snapshot.waiting_for;
  const line = document.getElementById("next");
  document.querySelectorAll(".place.next, .place.decide").forEach((e) =>
    e.classList.remove("next", "decide"));
  if (!w || v.paused) { line.textContent = v.paused ? "Table stopped" : idle(v); return; }
  if (w.what === "card") {
    const id = w.to === "seat" ? `seat-${w.seat}` : w.to;
    const p = document.querySelector(`[data-place="${id}"]`);
    if (p) p.classList.add("next");
    line.textContent = `Next card \u2192 ${w.to === "seat" ? `seat ${w.seat}` +
      (w.hand ? ` hand ${w.hand + 1}` : "") : w.to}${w.face === "down" ? " (face down)" : ""}`;
  } else if (w.what === "decision") {
    const p = document.querySelector(`[data-place="seat-${w.seat}"]`);
    if (p) p.classList.add("decide");
    line.textContent = `Waiting: seat ${w.seat}${w.hand ? ` hand ${w.hand + 1}` : ""} decides`;
  } else if (w.what === "insurance") {
    line.textContent = "Waiting: insurance";
  } else {
    line.textContent = "Waiting: the winning number";
  }
}

function idle(v) {
  const s = v.snapshot;
  if (s.phase === "no_shoe") return "Load the shoe";
  if (s.phase === "shuffle_due") return "Shuffle and load a new shoe";
  if (s.phase === "burn") return "Burn procedure";
  return v.last_result ? `Round ${v.last_result.round} over: collect the cards` : "Waiting for bets";
}

function render(v) {
  DS.header(v);
  DS.banner(v);
  const layout = document.getElementById("layout");
  layout.replaceChildren();
  layout.dataset.game = v.snapshot.game;
  ({blackjack, baccarat, roulette})[v.snapshot.game](v, layout);
  next(v);
  DS.tick(v);
}

DS.connect(render);
