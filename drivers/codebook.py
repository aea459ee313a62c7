"""The codebook: barcode payloads printed on the studio's decks -> cards. Loaded from the
calibration file's [codebook] table; a payload not in it is never guessed."""
from controller.cards import INDEX

MAX_PAYLOAD = 64


class CodebookError(ValueError):
    pass


def valid_payload(p):
    return isinstance(p, str) and 0 < len(p) <= MAX_PAYLOAD and p.isprintable() and p == p.strip()


def codebook_from_mapping(data, where="codebook"):
    """{payload: card} -> a validated dict. Several payloads may name one card (a code per deck)."""
    if not isinstance(data, dict) or not data:
        raise CodebookError(f"{where}: expected a non-empty table of payload = card")
    out = {}
    for payload, card in data.items():
        if not valid_payload(payload):
            raise CodebookError(f"{where}.{payload!r}: a payload is 1-{MAX_PAYLOAD} printable "
                                f"characters without surrounding spaces")
        if card not in INDEX:
            raise CodebookError(f"{where}.{payload}: {card!r} is not a card (e.g. 'As', 'Td')")
        out[payload] = card
    return out
