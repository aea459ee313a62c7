"""Scenario files for table-sim: a shoe seed, the players, and a script of faults at given rounds.

    {"seed": 7, "rounds": 200, "shoe": "hid",
     "players": {"1": "easy", "2": "normal", "3": "hard"},
     "faults": [{"round": 3, "fault": "corrupt_frame"}, {"round": 9, "fault": "daemon_kill"}]}

A bare list is taken as the faults alone. Everything is checked before the table starts.
"""
import json

SHOE_FAULTS = ("corrupt_frame", "drop_frame", "unreadable_card", "foreign_card", "double_fire",
               "unplug_shoe", "card_out_of_turn", "camera_disagrees")
WHEEL_FAULTS = ("miss_spin", "failed_launch", "no_ball", "garbled_packet")
ANY_TABLE = ("broker_restart", "daemon_kill")
# the house procedures (issue #18), each resolved by the simulated pit boss as a supervisor
CARD_PROCEDURES = ("exposed_card", "misdeal", "shoe_jam")
WHEEL_PROCEDURES = ("no_spin", "double_number", "wheel_fault")
ANY_PROCEDURES = ("correction",)
PROCEDURES = CARD_PROCEDURES + WHEEL_PROCEDURES + ANY_PROCEDURES
# lost between the betting system and the table (it sends again / asks for a resend)
CLIENT_FAULTS = ("lost_command", "lost_reply", "lost_event")
HID_FAULTS = ("partial_code", "wrong_layout")      # a keyboard-mode scanner shoe only
# a dropped code has no resend: the card would be lost unseen; a scanner reports no jam
V1_ONLY = ("drop_frame", "shoe_jam")
FAULTS = SHOE_FAULTS + ANY_TABLE + WHEEL_FAULTS + CLIENT_FAULTS + HID_FAULTS + PROCEDURES
SHOES = ("v1", "hid")
LEVELS = ("easy", "normal", "hard")
KEYS = ("seed", "rounds", "players", "faults", "profile", "shoe")


class ScenarioError(ValueError):
    pass


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise ScenarioError(f"{path}: {e.strerror}") from None
    except ValueError as e:
        raise ScenarioError(f"{path}: not JSON: {e}") from None
    return parse(data, path)


def parse(data, where="scenario"):
    if isinstance(data, list):
        data = {"faults": data}
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected an object or a list of faults")
    for k in data:
        if k not in KEYS:
            raise ScenarioError(f"{where}: unknown key {k!r} (known: {', '.join(KEYS)})")
    out = {"faults": []}
    for k in ("seed", "rounds"):
        if k in data:
            v = data[k]
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ScenarioError(f"{where}.{k}: a whole number >= 0, got {v!r}")
            out[k] = v
    if "profile" in data:
        out["profile"] = str(data["profile"])
    if "shoe" in data:
        if data["shoe"] not in SHOES:
            raise ScenarioError(f"{where}.shoe: one of {', '.join(SHOES)}, got {data['shoe']!r}")
        out["shoe"] = data["shoe"]
    players = data.get("players", {})
    if not isinstance(players, dict):
        raise ScenarioError(f"{where}.players: a table of seat = level")
    out["players"] = {}
    for seat, level in players.items():
        if str(seat) not in tuple("1234567"):    # not isdigit(): '²' passes it and int() raises
            raise ScenarioError(f"{where}.players.{seat}: a seat is 1-7")
        if level not in LEVELS:
            raise ScenarioError(f"{where}.players.{seat}: level is one of {', '.join(LEVELS)}, got {level!r}")
        out["players"][int(seat)] = level
    for i, f in enumerate(data.get("faults", [])):
        if not isinstance(f, dict) or set(f) != {"round", "fault"}:
            raise ScenarioError(f'{where}.faults[{i}]: expected {{"round": N, "fault": NAME}}')
        if f["fault"] not in FAULTS:
            raise ScenarioError(f"{where}.faults[{i}]: unknown fault {f['fault']!r}; known: {', '.join(FAULTS)}")
        if not isinstance(f["round"], int) or isinstance(f["round"], bool) or f["round"] < 1:
            raise ScenarioError(f"{where}.faults[{i}].round: a round number >= 1, got {f['round']!r}")
        out["faults"].append({"round": f["round"], "fault": f["fault"]})
    return out


def check_for_table(faults, game, shoe="v1"):
    """Refuse a fault that means nothing at this kind of table (or shoe)."""
    for f in faults:
        name = f["fault"]
        if name in ANY_TABLE + CLIENT_FAULTS + ANY_PROCEDURES:
            continue
        if (name in HID_FAULTS and shoe != "hid") or (name in V1_ONLY and shoe == "hid"):
            raise ScenarioError(f"fault {name!r} is not for a {shoe} shoe")
        if (name in WHEEL_FAULTS + WHEEL_PROCEDURES) != (game == "roulette"):
            raise ScenarioError(f"fault {name!r} is not for a {game} table")
