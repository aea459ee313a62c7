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
from dealer_station.export import export_round

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
    assert status == 403 and reply["code"] == "not_authorized"
    # the dealer's own part: a dealer error reported from the page (the supervisor decides)
    assert pit.is_hidden('[data-action="supervisor_decision"]')
    pit.click('[data-action="dealer_error"]')
    pit.select_option("#cerror", "wrong_place")
    pit.fill("#creason", "seat 2's card went to seat 3")
    n = len(table.of_type("irregularity"))
    pit.click("#cok")
    pit.wait_for_selector("#result.ok", timeout=WAIT)
    err = table.wait_for("irregularity", n + 1)[n]
    assert err["code"] == "dealer_error" and err["detail"] == {"error": "wrong_place", "by": DEALER[0]}
    assert table.of_type("round_resumed") == []
    ctx.close()

    # the pit boss resolves it from the page, confirmed with a reason
    ctx = browser.new_context(viewport={"width": 1920, "height": 1080}, bypass_csp=True)
    pit = ctx.new_page()
    login(pit, table.url, SUPERVISOR[0], SUPERVISOR[2])
    pit.wait_for_selector('#open li.irr[data-code="unexpected_card"]', timeout=WAIT)
    pit.wait_for_selector('#open li.irr[data-code="dealer_error"]', timeout=WAIT)
    pit.wait_for_selector("#history tbody tr", timeout=WAIT)
    pit.screenshot(path=os.path.join(shots, "console-pit-1920x1080.png"))
    pit.set_viewport_size({"width": 1280, "height": 800})
    pit.screenshot(path=os.path.join(shots, "console-pit-1280x800.png"))

    # round 1's export, downloaded from the history: what `dealer-station export --round 1` gives
    with pit.expect_download() as dl:
        pit.click('#history tr[data-round="1"] a.export')
    with open(dl.value.path()) as f:
        assert json.load(f) == export_round(os.path.join(table.dir, "journal.sqlite"), 1)
    assert dl.value.suggested_filename == "sim-round-1.json"

    # the dealer error first: resume waits for the supervisor's decision
    assert pit.is_disabled('[data-action="resume"]')
    pit.click('[data-action="supervisor_decision"]')
    pit.wait_for_selector("dialog#confirm[open]")
    pit.select_option("#cdecision", "continue")
    pit.fill("#creason", "the card stays at seat 3's place, seat 2 is dealt the next")
    pit.click("#cok")
    decided, = table.wait_for("supervisor_decided")
    assert (decided["decision"], decided["by"], decided["error"]) == ("continue", SUPERVISOR[0],
                                                                      "wrong_place")
    pit.wait_for_selector('#open li.irr[data-code="dealer_error"]', state="detached", timeout=WAIT)
    pit.click('[data-action="resume"]')
    pit.wait_for_selector("dialog#confirm[open]")
    pit.click("#cok")                                    # no reason: not sent
    assert pit.is_visible("dialog#confirm[open]") and table.of_type("round_resumed") == []
    pit.fill("#creason", "card out of turn to the discard rack")
    pit.click("#cok")
    table.wait_for("round_resumed")
    dealer.wait_for_selector("#banner[hidden]", state="attached", timeout=WAIT)
    pit.wait_for_function("document.getElementById('actions').textContent.includes('pit (supervisor): resume')",
                          timeout=WAIT)
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
    # european with the simulated camera: its pit boss is the simulated one, so nothing races
    run = TableRun(profile, 1, speed=0, camera=profile == "european")
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
        if profile == "european":
            camera_frame_is_served_with_its_zones(run)
    finally:
        run.close()


def camera_frame_is_served_with_its_zones(run):
    """The pit page's camera picture: the newest frame as JPEG with the calibration's zones."""
    import urllib.request
    import cv2
    import numpy as np
    from drivers.camera.virtual import SIZE
    req = urllib.request.Request(f"{run.url}/api/login", json.dumps(
        {"name": SUPERVISOR[0], "password": SUPERVISOR[2]}).encode(),
        {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        cookie = r.headers["Set-Cookie"].split(";")[0]
    req = urllib.request.Request(f"{run.url}/api/camera.jpg", headers={"Cookie": cookie})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.headers["Content-Type"] == "image/jpeg"
        img = cv2.imdecode(np.frombuffer(r.read(), np.uint8), cv2.IMREAD_COLOR)
    assert img is not None and img.shape[1] == min(960, SIZE[0])
    k = img.shape[1] / SIZE[0]
    b, g, r_ = (img[:, :, i].astype(int) for i in range(3))
    yellow = (b < 110) & (g > 170) & (r_ > 170)        # the zones are drawn in (0, 255, 255)
    for name, poly in run.h.tcam.cam.zones.items():    # each zone's edge, where calibrated
        (x0, y0), (x1, y1) = poly[0], poly[1]
        x, y = int((x0 + x1) / 2 * k), int((y0 + y1) / 2 * k)
        assert yellow[max(0, y - 3):y + 4, max(0, x - 3):x + 4].any(), name


def pit_page(browser, run, size=(1280, 800)):
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]}, bypass_csp=True,
                              accept_downloads=True)
    page = ctx.new_page()
    login(page, run.url, SUPERVISOR[0], SUPERVISOR[2])
    page.wait_for_selector("#conn.ok", timeout=WAIT)
    return page


def confirm(page, action, reason, fill=(), on=None):
    """An action from its button (or `on`, a row's own button), confirmed with a reason."""
    page.click(on or f'[data-action="{action}"]:not([disabled])', timeout=WAIT)
    page.wait_for_selector("dialog#confirm[open]")
    for sel, value in fill:
        page.fill(sel, value)
    page.fill("#creason", reason)
    page.click("#cok")


def test_a_pit_boss_enters_the_number_declares_a_no_spin_and_corrects_a_result(browser, shots):
    """Roulette: the wheel holds its spin in no more bets (the round under way, no number
    coming), so nothing races the page: a no-spin, the number by hand, then a correction."""
    # two rounds: the table is followed (bets placed, messages noted) past the first
    run = TableRun("roulette", 2, speed=0, wheel_times=(4, 3, 10 ** 6, 2))
    try:
        run.start()
        run.play()
        run.wait_for("round_started")
        page = pit_page(browser, run)
        confirm(page, "no_spin", "the ball left the wheel")
        void, = run.wait_for("spin_void")
        assert (void["round"], void["reason"], void["by"]) == (1, "the ball left the wheel", "pit")
        confirm(page, "manual_number", "the wheel's reader missed the pocket",
                [("#cnumber", "17")])
        result, = run.wait_for("round_result")
        assert (result["round"], result["number"], result["colour"]) == (1, 17, "black")
        # the correction refers to the published result by its sequence number
        page.wait_for_selector('#history tr[data-round="1"] button.correct', timeout=WAIT)
        page.click('#history tr[data-round="1"] button.correct')
        page.wait_for_selector("dialog#confirm[open]")
        assert f"event {result['seq']}" in page.inner_text("#cwhat")
        page.fill("#cnumber", "5")
        page.fill("#creason", "the dealer read 17, the ball lay in 5")
        page.screenshot(path=os.path.join(shots, "console-pit-correction-1280x800.png"))
        page.click("#cok")
        fixed, = run.wait_for("result_corrected")
        assert (fixed["round"], fixed["corrects"], fixed["result"]["number"], fixed["by"],
                fixed["reason"]) == (1, result["seq"], 5, "pit", "the dealer read 17, the ball lay in 5")
        page.wait_for_selector("#history .corrected", timeout=WAIT)
        assert "corrected: 5 red (pit: the dealer read 17" in page.inner_text("#history")
        page.context.close()
    finally:
        run.close()
