"""Camera recognition on rendered frames: barcodes (both decoders) and visual rank/suit under every
condition, tracking, a whole dealt round through the virtual camera, and the engine's
cross-check of the camera against the shoe."""
import json
import queue

import cv2
import numpy as np
import pytest

from controller import expect, profile_from_mapping
from controller.cards import CARDS
from drivers.camera.driver import CameraDriver, CardSeen, Zones
from drivers.camera.recognize import PyzbarDecoder, Templates, VisualRecognizer, ZxingDecoder
from drivers.camera.synth import (CONDITIONS, baccarat_zones, dealt_round_frames, default_zones,
                                  reference_templates, scene)
from drivers.camera.tracker import ZoneTracker
from drivers.camera.video import FolderSource, GeneratorSource, VideoError, open_source
from helpers import Run, one, ready

CODES = {c: f"D01-{c}" for c in CARDS}
BOOK = {v: k for k, v in CODES.items()}
ZONES = default_zones()


@pytest.fixture(scope="module")
def templates():
    """Captured like the calibration tool does: one camera photo per card of the reference deck."""
    return reference_templates(ZONES)


def read_scene(driver, frame):
    if driver.mode == "visual":
        return driver.read_frame(frame)      # as process() reads: the whole frame once
    got = {}
    for name, crop, inside in driver.zones.crops(frame):
        got[name] = driver.read_zone(crop, inside)
    return got


@pytest.mark.parametrize("cond", CONDITIONS)
def test_zxing_reads_every_code_under_every_condition(cond):
    d = CameraDriver(iter([]), Zones(ZONES), "barcode", ZxingDecoder(), BOOK)
    rng = np.random.default_rng(7)
    for k in range(3):
        cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
        frame, _ = scene(cards, ZONES, cond, seed=k, codes=CODES)
        got = read_scene(d, frame)
        assert all(v in ([cards[z]], []) for z, v in got.items())            # never wrong
        assert sum(got[z] == [cards[z]] for z in ZONES) >= 7, (cond, got)


def test_pyzbar_never_reads_a_wrong_card_and_an_unknown_code_is_refused():
    d = CameraDriver(iter([]), Zones(ZONES), "barcode", PyzbarDecoder(), BOOK)
    cards = {z: c for z, c in zip(ZONES, ["As", "Td", "7h", "Qc", "2d", "9s", "Jh", "Kd"])}
    frame, _ = scene(cards, ZONES, "clean", seed=1, codes=CODES)
    got = read_scene(d, frame)
    assert all(v in ([cards[z]], []) for z, v in got.items())
    assert sum(bool(v) for v in got.values()) >= 6
    foreign = {c: f"XX-{c}" for c in CARDS}       # a deck whose codes are not in the codebook
    frame, _ = scene(cards, ZONES, "clean", seed=1, codes=foreign)
    d2 = CameraDriver(iter([]), Zones(ZONES), "barcode", ZxingDecoder(), BOOK)
    assert all(v == [] for v in read_scene(d2, frame).values())
    assert d2.stats["unknown_codes"] == 8


@pytest.mark.parametrize("cond", CONDITIONS)
def test_visual_recognition_refuses_rather_than_guesses(templates, cond):
    d = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=VisualRecognizer(templates))
    rng = np.random.default_rng(11)
    right = total = 0
    for k in range(4):
        cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
        frame, _ = scene(cards, ZONES, cond, seed=20 + k)
        for z, v in read_scene(d, frame).items():
            assert v in ([cards[z]], []), (cond, z, v, cards[z])     # zero wrong reads
            right += v == [cards[z]]
            total += 1
    assert right / total >= 0.9, (cond, right, total)


def test_templates_save_and_load(templates, tmp_path):
    templates.save(tmp_path)
    t2 = Templates.load(tmp_path)
    assert set(t2.patches) == set(CARDS) and t2.box == templates.box
    assert t2.card_size == pytest.approx(templates.card_size)
    assert t2.print.to_json() == templates.print.to_json()                       # the deck fingerprint
    from drivers.camera.index import face_score
    assert min(face_score(t2.faces[c], templates.faces[c]) for c in CARDS) > 0.999   # 16-bit faces
    (tmp_path / "face_Kd.png").unlink()
    with pytest.raises(ValueError, match="face_Kd.png"):
        Templates.load(tmp_path)
    (tmp_path / "index_As.png").unlink()
    with pytest.raises(ValueError, match="missing template index_As.png"):
        Templates.load(tmp_path)
    (tmp_path / "deck.json").unlink()
    with pytest.raises(ValueError, match="no deck.json"):
        Templates.load(tmp_path)


def test_tracker_reports_once_when_stable_and_notices_pick_up():
    t = ZoneTracker(stable=3, gone=2)
    assert t.update("seat_1", ["As"]) == [] and t.update("seat_1", ["As"]) == []
    assert t.update("seat_1", ["As"]) == [("seen", "As")]
    assert t.update("seat_1", ["As"]) == []
    assert t.update("seat_1", []) == [] and t.update("seat_1", []) == [("gone", "As")]
    assert t.update("seat_2", ["Kd"]) == [] and t.update("seat_2", []) == []   # a flicker is nothing


def test_tracker_counts_two_copies_of_a_card_in_one_zone():
    t = ZoneTracker(stable=1, gone=1)
    assert t.update("seat_1", ["7h"]) == [("seen", "7h")]
    assert t.update("seat_1", ["7h", "7h"]) == [("seen", "7h")]      # a second 7h of the shoe
    assert t.update("seat_1", ["7h"]) == [("gone", "7h")]


@pytest.mark.parametrize("mode", ["barcode", "visual"])
def test_a_whole_dealt_round_through_the_virtual_camera(templates, mode):
    z = baccarat_zones()
    placements = [("player", "9s"), ("banker", "Kh"), ("player", "8d"), ("banker", "5c"),
                  ("banker", "4h")]
    frames = dealt_round_frames(placements, z, "noise", codes=CODES if mode == "barcode" else None,
                                seed=3)
    q = queue.Queue()
    kw = {"decoder": ZxingDecoder(), "codebook": BOOK} if mode == "barcode" else {
        "recognizer": VisualRecognizer(templates)}
    d = CameraDriver((f for f, _ in frames), Zones(z), mode, pace=0.0, **kw)
    d.start(q.put)
    seen = []
    while True:
        e = q.get(timeout=10)
        if isinstance(e, CardSeen):
            seen.append((e.zone, e.card))
        if getattr(e, "state", None) == "disconnected":
            break
    d.close()
    assert seen == placements


def test_video_sources(tmp_path):
    for i in range(3):
        cv2.imwrite(str(tmp_path / f"{i}.png"), np.full((10, 10, 3), i, np.uint8))
    s = open_source(str(tmp_path))
    assert isinstance(s, FolderSource) and [s.read()[1][0, 0, 0] for _ in range(3)] == [0, 1, 2]
    assert s.read() == (False, None)
    assert isinstance(open_source(iter([1])), GeneratorSource)
    with pytest.raises(VideoError, match="cannot open"):
        open_source(str(tmp_path / "nope.mp4"))
    with pytest.raises(ValueError, match="outside the 1280x720 frame"):
        Zones({"seat_1": [[0, 0], [1300, 0], [10, 10]]}, frame_size=(1280, 720))


# -- the engine's cross-check -------------------------------------------------------------------

def dealt(profile="luxury21"):
    r = ready(profile)
    r.close(1, 2)
    r.feed("Ts", "9d", "5c", "7s", "Kh", "2c")   # seat1 T 7, seat2 9 K, dealer 5 + hole 2c
    return r


def test_camera_confirms_a_card_where_the_engine_sent_it():
    r = dealt()
    out = r.feed({"type": "card_seen", "card": "Ts", "zone": "seat_1"})
    assert out == [{"type": "card_confirmed", "round": 1, "card": "Ts", "zone": "seat_1"}]
    out = r.feed({"type": "card_seen", "card": "5c", "zone": "dealer"})
    assert out[0]["type"] == "card_confirmed"
    # the tracker reports a card again after losing it for a while (a hand over it, a restart)
    assert r.feed({"type": "card_seen", "card": "Ts", "zone": "seat_1"}) == []


def test_right_card_wrong_zone_is_a_misplaced_card():
    r = dealt()
    out = r.feed({"type": "card_seen", "card": "9d", "zone": "seat_1"})
    assert one(out, "irregularity")["code"] == "misplaced_card"
    assert one(out, "irregularity")["detail"]["expected_zone"] == "seat_2"


def test_a_different_card_is_a_source_mismatch_and_the_hole_card_seen_is_an_exposure():
    r = dealt()
    out = r.feed({"type": "card_seen", "card": "Qs", "zone": "seat_2"})
    irr = one(out, "irregularity")
    assert irr["code"] == "source_mismatch" and irr["detail"]["read"] == ["9d", "Kh"]
    assert irr["detail"]["seen"] is None      # withheld while the hole card lies unrevealed
    r.feed({"type": "resume"})
    out = r.feed({"type": "card_seen", "card": "2c", "zone": "dealer"})   # the face-down card
    irr = one(out, "irregularity")
    assert irr["code"] == "exposed_hole_card" and irr["detail"] == {"zone": "dealer"}
    assert "2c" not in json.dumps(out)


def test_the_camera_resolves_an_unreadable_card():
    r = ready("punto_banco")
    r.close()
    r.feed("9s", {"type": "card_unreadable"})
    out = r.feed({"type": "card_seen", "card": "Kh", "zone": "banker"})
    assert one(out, "card_dealt")["card"] == "Kh" and one(out, "card_dealt")["to"] == "banker"


def test_camera_as_the_card_source_for_a_table_without_a_shoe_scanner():
    p = profile_from_mapping({"base": "punto_banco", "name": "pb-camera", "card_source": "camera"})
    r = Run(p)
    r.load()
    r.feed({"type": "card_seen", "card": "As", "zone": "player"})     # wrong place for the burn?
    r = Run(p)
    r.load("As", "2c")                                                 # burn from the shoe reader
    r.close()
    out = r.feed({"type": "card_seen", "card": "9s", "zone": "player"})
    assert one(out, "card_dealt") == {"type": "card_dealt", "round": 1, "card": "9s", "to": "player",
                                      "seat": None, "hand": None, "face": "up"}
    out = r.feed({"type": "card_seen", "card": "Kh", "zone": "player"})   # the banker's turn
    assert one(out, "irregularity")["code"] == "misplaced_card"


def test_the_camera_confirms_the_last_cards_after_the_result_and_reports_a_late_mismatch():
    """The shoe's last card ends the round at once; the camera sees it some frames later."""
    r = ready("punto_banco")
    r.close()
    out = r.feed("9s", "Kh", "Tc", "3d")          # player 9 natural: the result, no third cards
    assert one(out, "round_result")["round"] == 1
    out = r.feed({"type": "card_seen", "card": "3d", "zone": "banker"})
    assert out == [{"type": "card_confirmed", "round": 1, "card": "3d", "zone": "banker"}]
    assert r.feed({"type": "card_seen", "card": "3d", "zone": "banker"}) == []   # seen again
    out = r.feed({"type": "card_seen", "card": "4d", "zone": "banker"})
    irr = one(out, "irregularity")
    assert irr["code"] == "source_mismatch" and irr["round"] == 1 and irr["detail"]["after_result"]
    assert irr["detail"]["read"] == ["Kh"]
    assert not [o for o in out if o["type"] == "round_paused"]      # settled: nothing to pause
    out = r.feed({"type": "card_seen", "card": "9s", "zone": "banker"})     # the player's card
    assert one(out, "irregularity")["code"] == "misplaced_card"
    r.close()                                      # the next round: the old one is history
    assert one(r.feed({"type": "card_seen", "card": "Kh", "zone": "banker"}),
               "irregularity")["detail"].get("after_result") is None


def test_a_card_seen_before_the_shoe_read_it_waits_for_the_read():
    """A resend or a replugged cable delays the shoe's read; the camera is quicker."""
    r = ready("punto_banco")
    r.close()
    assert r.feed({"type": "card_seen", "card": "9s", "zone": "player"}) == []
    out = r.feed("9s")                             # the shoe's read arrives: the same card
    assert [o["type"] for o in out][:2] == ["card_dealt", "card_confirmed"]
    assert r.feed({"type": "card_seen", "card": "Kh", "zone": "banker"}) == []
    out = r.feed("Qh")                             # the shoe read another card for that place
    irr = one(out, "irregularity")
    assert irr["code"] == "source_mismatch" and irr["detail"] == {"zone": "banker", "seen": "Kh",
                                                                  "read": ["Qh"]}
    assert one(out, "round_paused")["reason"] == "source_mismatch"


def test_card_seen_is_validated():
    r = dealt()
    for bad in ({"type": "card_seen", "card": "Ts", "zone": "seat_9"},
                {"type": "card_seen", "card": "10s", "zone": "seat_1"}):
        assert one(r.feed(bad), "rejected")["code"] == "malformed"
    assert one(Run("roulette").feed({"type": "card_seen", "card": "Ts", "zone": "seat_1"}),
               "rejected")["code"] == "not_allowed"


def test_the_daemon_cross_checks_the_camera_against_the_shoe(tmp_path, monkeypatch):
    """The real daemon (in this process) with a virtual shoe and a virtual camera: the camera's
    reads confirm the shoe's, and a card the shoe did not read is a source mismatch."""
    import json
    import time
    from drivers.camera import video
    from drivers.virtual_shoe import VirtualShoe
    from dealer_station.config import check_config
    from dealer_station.daemon import Daemon
    from mqtt_rig import Broker, workdir
    b = Broker(workdir())
    b.start()
    shoe = VirtualShoe(decks=8, seed=2, heartbeat=0.2)
    shoe.start()
    z = baccarat_zones()
    cal = tmp_path / "calibration.toml"
    cal.write_text("[zones]\n" + "".join(f"{n} = {[[round(x), round(y)] for x, y in p]}\n"
                                          for n, p in z.items())
                   + "[codebook]\n" + "".join(f'"{p}" = "{c}"\n' for c, p in CODES.items()))
    frames = queue.Queue()

    def virtual_camera():
        while (f := frames.get()) is not None:
            yield f
    monkeypatch.setattr(video, "open_source",
                        lambda spec, settings=None: video.GeneratorSource(virtual_camera()))
    cfg, errors = check_config({
        "table": {"id": "cam1", "profile": "punto_banco", "calibration": str(cal)},
        "shoe": {"url": shoe.path}, "broker": {"port": b.port},
        "paths": {"journal": str(tmp_path / "j.sqlite")}, "metrics": {"enabled": False},
        "camera": {"enabled": True, "source": "virtual", "stable_frames": 2}})
    assert not errors, errors
    d = Daemon(cfg)
    d.start()

    def run(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            d.run_once(0.05)
    try:
        d.process({"type": "shoe_loaded"}, "test")
        burn = shoe.deal()
        for _ in range(__import__("controller.cards", fromlist=["x"]).BJ_VALUE[burn]):
            shoe.deal()
        run(0.5)
        d.process({"type": "betting_closed"}, "test")
        coup = [shoe.deal() for _ in range(4)]
        run(0.5)
        placements = [("player", coup[0]), ("banker", coup[1]), ("player", coup[2]), ("banker", coup[3])]
        for f, _ in dealt_round_frames(placements, z, "noise", codes=CODES, frames_per_card=4, seed=5):
            frames.put(f)
        run(2.0)
        rows = [(o, json.loads(body)) for o, body in
                d.journal.db.execute("SELECT origin, body FROM inputs")]
        seen = [(body["zone"], body["card"]) for o, body in rows if o == "camera"]
        assert sorted(seen) == sorted(placements)
        outs = [json.loads(r[0]) for r in d.journal.db.execute("SELECT body FROM outbox")]
        confirmed = [(o["zone"], o["card"]) for o in outs if o["type"] == "card_confirmed"]
        assert sorted(confirmed) == sorted(placements)
        assert not [o for o in outs if o["type"] == "irregularity"]
        # a card the shoe never read lands on the player's side
        extra = placements + [("player", "As" if "As" not in coup else "Ad")]
        for f, i in dealt_round_frames(extra, z, "noise", codes=CODES, frames_per_card=4, seed=5):
            if i == len(placements):      # the same layout, with one more card on it
                frames.put(f)
        run(2.0)
        if (e := expect(d.table)) and e[:2] == ("card", "player"):
            # seen where the table waits for the player's third card: held until the shoe's
            # read for that place arrives, and then found different
            assert d.table.early and shoe.deal() != d.table.early[0][1]
            run(0.5)
        outs = [json.loads(r[0]) for r in d.journal.db.execute("SELECT body FROM outbox")]
        assert [o["code"] for o in outs if o["type"] == "irregularity"] == ["source_mismatch"]
    finally:
        frames.put(None)
        d.close()
        shoe.close()
        b.stop()


def test_capture_keeps_only_the_newest_frame_and_counts_the_dropped():
    import time
    from drivers.camera.video import Capture
    frames = [np.full((4, 4), i, np.uint8) for i in range(50)]
    cap = Capture(GeneratorSource(iter(frames)))
    cap.start()
    time.sleep(0.3)                       # a slow consumer: the source ran ahead
    n, f = cap.latest()
    assert n == 50 and f[0, 0] == 49      # the newest, not the oldest
    assert cap.dropped >= 48
    assert cap.latest(timeout=0.1) == (None, None)
    cap.close()


def test_the_virtual_camera_streams_a_table_the_camera_driver_reads():
    """MJPEG over HTTP, opened by OpenCV as a network camera: the driver reads the laid cards in
    their zones, not the face-down one, and sees the disagreeing card as what it shows."""
    import time
    from drivers.camera.virtual import VirtualCamera, codebook
    cam = VirtualCamera("blackjack", fps=30)
    cam.start()
    cam.lay("seat_1", "As")
    cam.lay("seat_1", "7h")
    cam.lay("dealer", "Kd")
    cam.lay("dealer", "2c", face_up=False)
    cam.disagree_next()
    shown = cam.lay("seat_7", "9s")
    assert shown != "9s"
    seen = queue.Queue()
    d = CameraDriver(cam.url, Zones(cam.zones), "barcode", ZxingDecoder(), codebook(), stable=2, gone=3)
    d.start(seen.put)
    try:
        got = set()
        end = time.monotonic() + 5
        while time.monotonic() < end and len(got) < 4:
            e = seen.get(timeout=5)
            if isinstance(e, CardSeen):
                got.add((e.zone, e.card))
        assert got == {("seat_1", "As"), ("seat_1", "7h"), ("dealer", "Kd"), ("seat_7", shown)}
        cam.turn_over("dealer", 1)             # the hole card revealed
        e = seen.get(timeout=5)
        assert (e.zone, e.card) == ("dealer", "2c")
    finally:
        d.close()
        cam.close()
