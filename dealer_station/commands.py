"""Commands from the betting system (MQTT) -> engine inputs. The envelope is checked here; the
engine checks the rest (schema and whether it is allowed now).

`parse` is total: any byte string gives a command dict or a CommandError, never another
exception. A hostile payload must not reach SQLite or the engine with something they cannot
hold: JSON nested deeper than a command ever is (RecursionError in the parser), integers past
what SQLite and JSON consumers hold (OverflowError), NaN / Infinity, lone surrogates (which UTF-8
cannot encode), or a key given twice (which reading would a client mean?).
"""
import json
import math

from controller.protocol import SCHEMAS

# command type -> engine input type (manual_card: a pit boss entering a card by hand)
ENGINE_COMMANDS = {"betting_closed": "betting_closed", "decision": "decision",
                   "insurance_closed": "insurance_closed", "pause": "pause", "resume": "resume",
                   "void_round": "void_round", "shoe_loaded": "shoe_loaded",
                   "manual_card": "card",
                   # the procedures (issue #18): who may send each is in controller/rights.py
                   "no_spin": "no_spin", "manual_number": "manual_number",
                   "correct_result": "correct_result", "dealer_error": "dealer_error",
                   "supervisor_decision": "supervisor_decision"}
OTHER_COMMANDS = ("resend",)
MAX_PAYLOAD = 4096
MAX_DEPTH = 4            # {"seats": [1, 2]} is depth 2; no command nests deeper than this
MAX_INT = 2 ** 53 - 1    # the integers every JSON consumer reads exactly


class CommandError(ValueError):
    def __init__(self, code, reason, command_id=None):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.id = command_id


def _depth(text):
    """The deepest nesting of [ and { outside strings (the JSON parser recurses per level)."""
    depth = deepest = 0
    in_str = escaped = False
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _int(s):
    if len(s) > 17:   # a longer literal cannot be within MAX_INT; and int() of 10**6 digits is slow
        raise CommandError("malformed", f"integer {s[:20]}...: at most {MAX_INT} in magnitude")
    v = int(s)
    if abs(v) > MAX_INT:
        raise CommandError("malformed", f"integer {s}: at most {MAX_INT} in magnitude")
    return v


def _float(s):
    v = float(s)
    if not math.isfinite(v):
        raise CommandError("malformed", f"number {s[:20]}: out of range")
    return v


def _constant(s):
    raise CommandError("malformed", f"{s} is not JSON")


def _object(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise CommandError("malformed", f"key {k!r} given twice")
        d[k] = v
    return d


def _check_text(v):
    """Every string (and key) must be encodable: a lone surrogate is not text."""
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise CommandError("malformed", "a string holds a lone surrogate (not UTF-8 text)") from None
    elif isinstance(v, dict):
        for k, x in v.items():
            _check_text(k)
            _check_text(x)
    elif isinstance(v, list):
        for x in v:
            _check_text(x)


def _salvaged_id(text):
    """The id of a command refused as not well formed, where the id itself is plain: given once
    at the top level, a string of 1-64 characters of UTF-8 text (the rest may hold a key given
    twice, NaN, a huge integer, a lone surrogate). A client retrying by id sees its answer; an id
    that is itself in doubt (given twice, not text) stays null: nothing guessed."""
    try:
        top = json.loads(text, object_pairs_hook=lambda pairs: pairs)
    except (ValueError, RecursionError):
        return None
    if not isinstance(top, list) or not all(isinstance(p, tuple) for p in top):
        return None
    ids = [v for k, v in top if k == "id"]
    if len(ids) != 1 or not isinstance(ids[0], str) or not 0 < len(ids[0]) <= 64:
        return None
    try:
        ids[0].encode("utf-8")
    except UnicodeEncodeError:
        return None
    return ids[0]


def parse(payload):
    """bytes -> (command dict). Raises CommandError(malformed) and nothing else."""
    try:
        return _parse(payload)
    except CommandError as e:
        if e.id is None and isinstance(e.__dict__.get("text"), str):
            e.id = _salvaged_id(e.text)
        raise


def _parse(payload):
    if len(payload) > MAX_PAYLOAD:
        raise CommandError("malformed", f"a command is at most {MAX_PAYLOAD} bytes")
    try:
        text = payload.decode("utf-8") if isinstance(payload, (bytes, bytearray)) else str(payload)
    except UnicodeDecodeError as e:
        raise CommandError("malformed", f"not UTF-8: {e.reason} at byte {e.start}") from None
    if _depth(text) > MAX_DEPTH:
        e = CommandError("malformed", f"JSON nested deeper than {MAX_DEPTH} levels")
        e.text = text           # its id may still be read (_salvaged_id: a RecursionError is None)
        raise e
    try:
        cmd = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant,
                         object_pairs_hook=_object)
    except (ValueError, RecursionError) as e:
        if isinstance(e, CommandError):
            e.text = text               # its id may still be read (_salvaged_id)
            raise
        raise CommandError("malformed", f"not JSON: {e}") from None
    try:
        _check_text(cmd)
    except CommandError as e:
        e.text = text
        raise
    if not isinstance(cmd, dict):
        raise CommandError("malformed", "a command is a JSON object")
    cid = cmd.get("id")
    if not isinstance(cid, str) or not 0 < len(cid) <= 64:
        raise CommandError("malformed", "id: every command needs a string id of 1-64 characters "
                                        "(a repeated id is applied once)")   # "" is no id
    by = cmd.get("by")
    if by is not None and not (isinstance(by, str) and 0 < len(by) <= 64):
        raise CommandError("malformed", "by: the staff member's name, 1-64 characters", cid)
    kind = cmd.get("type")
    if kind not in ENGINE_COMMANDS and kind not in OTHER_COMMANDS:
        shown = repr(kind) if not isinstance(kind, (str, list, dict)) or len(kind) <= 40 else "(too long)"
        raise CommandError("malformed", f"unknown command type {shown}; known: "
                                        f"{', '.join(list(ENGINE_COMMANDS) + list(OTHER_COMMANDS))}", cid)
    return cmd


def to_input(cmd):
    """An engine command -> the engine input (without the envelope id: the daemon tracks it)."""
    # `by` and an override's `reason` are for the rights and the audit log (station.py); the
    # engine gets them only where its input has them (controller/protocol.py)
    fields = SCHEMAS.get(ENGINE_COMMANDS[cmd["type"]], {})
    body = {k: v for k, v in cmd.items() if k != "id" and (k not in ("by", "reason") or k in fields)}
    body["type"] = ENGINE_COMMANDS[cmd["type"]]
    if "reason" not in SCHEMAS[body["type"]] and isinstance(body.get("reason"), str):
        del body["reason"]
    if cmd["type"] == "manual_card":
        if set(body) - {"type", "card"}:
            extra = sorted(set(body) - {"type", "card"})[0]
            raise CommandError("malformed", f"manual_card.{extra}: unknown field", cmd["id"])
        body["source"] = "manual"
    return body
