"""The table console end to end: table-sim's real daemon on a simulated table, the console it
serves, and Debian's headless Chromium driven by Playwright. One luxury21 table and one browser
serve the tests in order (the table plays on in a thread); each other profile gets a short table.

No timed assertions: the browser waits for what it should show (the paint latency is measured by
bench/bench_console.py). Screenshots of both views go to $CONSOLE_SHOTS (docs/images when the
docs' pictures are renewed: CONSOLE_SHOTS=docs/images), else to a temporary folder."""
import json
import os
import signal
import tempfile

import pytest

from console_rig import ACCOUNTS, RECORD, TableRun, launch, login

playwright = pytest.importorskip("playwright.sync_api")
SUPERVISOR, DEALER = ACCOUNTS
WAIT = 60_000      # ms: how long the browser waits for what a table must show (a stuck table)
SIZES = ((1920, 1080), (1280, 800))


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as pw:
        b = launch(pw)
        yield b
        b.close()


@pytest.fixture(scope="module")
def table():
    # round 2: a card dealt out of turn (unexpected_card) pauses the table; nobody but the
    # console's pit boss resolves it
    # (no camera: the simulated camera's own reports would race the page's pit boss)
    run = TableRun("luxury21", 3, faults=[{"round": 2, "fault": "card_out_of_turn"}], camera=False,
                   pit_boss=False, speed=4).start()
    yield run
    run.close()


@pytest.fixture(scope="module")
def shots():
    d = os.environ.get("CONSOLE_SHOTS") or tempfile.mkdtemp(prefix="console-shots-")
    os.makedirs(d, exist_ok=True)
    return d


def dealer_page(browser, table, size=(1920, 1080)):
    # bypass_csp: Playwright's waits evaluate strings, which the console's own policy forbids
    page = browser.new_context(viewport={"width": size[0], "height": size[1]},
                               bypass_csp=True).new_page()
    page.add_init_script(RECORD)
    page.goto(f"{table.url}/dealer")
    page.wait_for_selector("#conn.ok", timeout=WAIT)
    return page


def rendered(card):
    return ("10" if card[0] == "T" else card[0]) + {"s": "\u2660", "h": "\u2665", "d": "\u2666",
                                                    "c": "\u2663"}[card[1]]


def shown_after(page, n):
    """The page's text once round n was over (the table goes on: read from the page's record)."""
    page.wait_for_function("window.__log.some(([d]) => { const v = JSON.parse(d); "
                           f"return !v.snapshot.round && v.last_result && v.last_result.round === {n}; }})",
                           timeout=WAIT)
    return next(t for d, t in page.evaluate("window.__log") if (json.loads(d)["last_result"] or {})
                .get("round") == n and not json.loads(d)["snapshot"]["round"])


def test_dealer_view_follows_the_round_and_never_shows_the_hole_card(browser, table, shots):
    page = dealer_page(browser, table)
    table.play()           # the page watches from before the first card
    # the next card's place lit on the drawing, then the round's result
    page.wait_for_selector(".place.next", timeout=WAIT)
    page.screenshot(path=os.path.join(shots, "console-dealer-1920x1080.png"))
    result = table.wait_for("round_result")[0]
    assert result["round"] == 1
    text = shown_after(page, 1)
    assert "Round 1 over" in text
    for c in result["dealer"]["cards"]:
        assert rendered(c) in text
    for s in result["seats"]:
        assert f"Seat {s['seat']}" in text
        for h in s["hands"]:
            assert h["outcome"] in text and all(rendered(c) in text for c in h["cards"])
    # every view the browser received, and the page's text after each, before the reveal
    hole = table.wait_for("hole_card_revealed")[0]
    assert hole["round"] == 1
    checked = 0
    for data, text in page.evaluate("window.__log"):
        v = json.loads(data)
        r = v["snapshot"]["round"]
        if not r or r["round"] != 1 or None not in r["dealer"]:
            continue           # not a view of round 1 with the hole card face down
        visible = [c for c in r["dealer"] if c] + [c for s in r["seats"] for h in s["hands"]
                                                   for c in h["cards"]]
        assert data.count(hole["card"]) == visible.count(hole["card"])
        assert text.count(rendered(hole["card"])) == visible.count(hole["card"])
        checked += 1
    assert checked > 0, "no view of round 1 with its hole card face down was received"
    page.context.close()


def test_an_irregularity_shows_the_banner_a_dealer_cannot_resolve_it_a_pit_boss_does(browser, table, shots):
    dealer = dealer_page(browser, table)
    table.play()
    dealer.wait_for_selector("#banner:not([hidden])", timeout=WAIT)
    assert dealer.get_attribute("#banner", "data-code") == "unexpected_card"
    assert "call the pit boss" in dealer.inner_text("#banner")
    dealer.screenshot(path=os.path.join(shots, "console-dealer-irregularity-1920x1080.png"))
    small = dealer_page(browser, table, (1280, 800))
    small.wait_for_selector("#banner:not([hidden])", timeout=WAIT)
    small.screenshot(path=os.path.join(shots, "console-dealer-1280x800.png"))
    small.context.close()

    # a dealer account: the page's buttons are off, and the server refuses a forged request
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    pit = ctx.new_page()
    login(pit, table.url, DEALER[0], DEALER[2])
    pit.wait_for_selector("#notice:not([hidden])", timeout=WAIT)
    pit.wait_for_selector("#open li.irr", timeout=WAIT)
    assert pit.is_disabled('[data-action="resume"]')
    status, reply = pit.evaluate("""async () => {
        const me = await DS.session();
        const r = await DS.post('/api/command', {type: 'resume', reason: 'I am the boss'}, me.csrf);
        return [r.status, r.data];
    }""")
    assert status == 403 and reply["code"] == "forbidden"
    assert table.of_type("round_resumed") == []
    ctx.close()

    # the pit boss resolves it from the page, confirmed with a reason
    ctx = browser.new_context(viewport={"width": 1920, "height": 1080}, bypass_csp=True)
    pit = ctx.new_page()
    login(pit, table.url, SUPERVISOR[0], SUPERVISOR[2])
    pit.wait_for_selector('#open li.irr[data-code="unexpected_card"]', timeout=WAIT)
    pit.wait_for_selector("#history tbody tr", timeout=WAIT)
    pit.screenshot(path=os.path.join(shots, "console-pit-1920x1080.png"))
    pit.set_viewport_size({"width": 1280, "height": 800})
    pit.screenshot(path=os.path.join(shots, "console-pit-1280x800.png"))
    pit.click('[data-action="resume"]')
    pit.wait_for_selector("dialog#confirm[open]")
    pit.click("#cok")                                    # no reason: not sent
    assert pit.is_visible("dialog#confirm[open]") and table.of_type("round_resumed") == []
    pit.fill("#creason", "card out of turn to the discard rack")
    pit.click("#cok")
    pit.wait_for_selector("#result.ok", timeout=WAIT)
    dealer.wait_for_selector("#banner[hidden]", state="attached", timeout=WAIT)
    pit.wait_for_function("document.getElementById('actions').textContent.includes('pit (supervisor): resume')",
                          timeout=WAIT)
    table.wait_for("round_resumed")
    ctx.close()
    dealer.context.close()


def test_a_lost_connection_shows_offline_and_recovers(browser, table):
    table.wait_done()
    page = dealer_page(browser, table)
    h = table.h
    h.daemon.send_signal(signal.SIGKILL)
    h.daemon.wait()
    page.wait_for_selector("#conn.bad", timeout=WAIT)
    assert page.inner_text("#conn") == "offline"
    h._start_daemon()                      # same config, same console port
    page.wait_for_selector("#conn.ok", timeout=WAIT)
    page.wait_for_function("document.getElementById('round').textContent === 'Round 3'",
                           timeout=WAIT)
    page.context.close()


@pytest.mark.parametrize("profile", ["european", "lucky7", "punto_banco", "roulette"])
def test_the_dealer_view_follows_a_round_of_every_profile(browser, profile):
    run = TableRun(profile, 1, speed=0)
    try:
        run.start()
        page = dealer_page(browser, run)
        # the wheel spins by itself from the start: follow a round begun after the page opened
        page.wait_for_function("window.__log.length > 0", timeout=WAIT)
        seen = page.evaluate("(JSON.parse(window.__log[0][0]).last_result || {}).round || 0")
        n = run.h.rounds = seen + 2 if profile == "roulette" else 1
        run.play()
        run.wait_done()
        result = next(m for m in run.of_type("round_result") if m["round"] == n)
        text = shown_after(page, n)
        if profile == "roulette":
            assert str(result["number"]) in text and result["colour"] in text
        elif profile == "punto_banco":
            assert (result["winner"] if result["winner"] == "tie" else f"{result['winner']} wins") in text.lower()
            assert all(rendered(c) in text for side in ("player", "banker")
                       for c in result[side]["cards"])
        else:
            assert "Round 1" in text
            for s in result["seats"]:
                assert all(h["outcome"] in text for h in s["hands"])
                assert all(rendered(c) in text for h in s["hands"] for c in h["cards"])
        page.context.close()
    finally:
        run.close()
