"""Commands from the betting system (MQTT) -> engine inputs. The envelope is checked here; the
engine checks the rest (schema and whether it is allowed now)."""
import json

# command type -> engine input type (manual_card: a pit boss entering a card by hand)
ENGINE_COMMANDS = {"betting_closed": "betting_closed", "decision": "decision",
                   "insurance_closed": "insurance_closed", "pause": "pause", "resume": "resume",
                   "void_round": "void_round", "shoe_loaded": "shoe_loaded",
                   "manual_card": "card"}
OTHER_COMMANDS = ("resend",)
MAX_PAYLOAD = 4096


class CommandError(ValueError):
    def __init__(self, code, reason, command_id=None):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.id = command_id


def parse(payload):
    """bytes -> (command dict). Raises CommandError(malformed)."""
    if len(payload) > MAX_PAYLOAD:
        raise CommandError("malformed", f"a command is at most {MAX_PAYLOAD} bytes")
    try:
        cmd = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as e:
        raise CommandError("malformed", f"not JSON: {e}") from None
    if not isinstance(cmd, dict):
        raise CommandError("malformed", "a command is a JSON object")
    cid = cmd.get("id")
    if not isinstance(cid, str) or not 0 < len(cid) <= 64:
        raise CommandError("malformed", "id: every command needs a string id of 1-64 characters "
                                        "(a repeated id is applied once)",
                           cid if isinstance(cid, (str, int)) else None)
    kind = cmd.get("type")
    if kind not in ENGINE_COMMANDS and kind not in OTHER_COMMANDS:
        raise CommandError("malformed", f"unknown command type {kind!r}; known: "
                                        f"{', '.join(list(ENGINE_COMMANDS) + list(OTHER_COMMANDS))}", cid)
    return cmd


def to_input(cmd):
    """An engine command -> the engine input (without the envelope id: the daemon tracks it)."""
    body = {k: v for k, v in cmd.items() if k != "id"}
    body["type"] = ENGINE_COMMANDS[cmd["type"]]
    if cmd["type"] == "manual_card":
        if set(body) - {"type", "card"}:
            extra = sorted(set(body) - {"type", "card"})[0]
            raise CommandError("malformed", f"manual_card.{extra}: unknown field", cmd["id"])
        body["source"] = "manual"
    return body
