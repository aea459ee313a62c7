"""Linux key codes (linux/input-event-codes.h) to characters, per keyboard layout, for barcode
scanners in keyboard mode. A scanner types as if it were a keyboard of the layout it was set up
for: the same key code means '-' on a US layout and 'ß' on a German one, so the layout is the
scanner's (its configuration sheet), not the Pi's console's.

A layout maps key code -> (plain, shifted[, AltGr]). Letters follow Caps Lock; the keypad is
the same on every layout (Num Lock on: scanners that type keypad digits assume it).
"""
EV_SYN, EV_KEY, EV_MSC = 0, 1, 4

KEY_TAB, KEY_ENTER, KEY_KPENTER = 15, 28, 96
KEY_LEFTSHIFT, KEY_RIGHTSHIFT, KEY_CAPSLOCK = 42, 54, 58
KEY_LEFTCTRL, KEY_RIGHTCTRL, KEY_LEFTALT, KEY_RIGHTALT = 29, 97, 56, 100
KEY_LEFTMETA, KEY_RIGHTMETA = 125, 126
SHIFTS = (KEY_LEFTSHIFT, KEY_RIGHTSHIFT)
OTHER_MODIFIERS = (KEY_LEFTCTRL, KEY_RIGHTCTRL, KEY_LEFTALT, KEY_LEFTMETA, KEY_RIGHTMETA)
SUFFIX_KEYS = {"enter": (KEY_ENTER, KEY_KPENTER), "tab": (KEY_TAB,)}

_ROWS = ((2, "1234567890"), (16, "qwertyuiop"), (30, "asdfghjkl"), (44, "zxcvbnm"))
KEYPAD = {71: "7", 72: "8", 73: "9", 74: "-", 75: "4", 76: "5", 77: "6", 78: "+", 79: "1",
          80: "2", 81: "3", 82: "0", 83: ".", 55: "*", 98: "/"}


def _letters_digits(shifted_digits):
    m = {}
    for start, keys in _ROWS:
        for i, ch in enumerate(keys):
            m[start + i] = (ch, ch.upper()) if ch.isalpha() else (ch, shifted_digits[i])
    return m


US = {**_letters_digits("!@#$%^&*()"),
      12: ("-", "_"), 13: ("=", "+"), 26: ("[", "{"), 27: ("]", "}"), 39: (";", ":"),
      40: ("'", '"'), 41: ("`", "~"), 43: ("\\", "|"), 51: (",", "<"), 52: (".", ">"),
      53: ("/", "?"), 57: (" ", " ")}

UK = {**US, 3: ("2", '"'), 4: ("3", "£"), 40: ("'", "@"), 41: ("`", "¬"), 43: ("#", "~"),
      86: ("\\", "|")}

DE = {**_letters_digits('!"§$%&/()='),
      21: ("z", "Z"), 44: ("y", "Y"),                 # QWERTZ
      3: ("2", '"', "²"), 4: ("3", "§", "³"), 8: ("7", "/", "{"), 9: ("8", "(", "["),
      10: ("9", ")", "]"), 11: ("0", "=", "}"), 12: ("ß", "?", "\\"), 13: ("´", "`"),
      16: ("q", "Q", "@"), 18: ("e", "E", "€"), 26: ("ü", "Ü"), 27: ("+", "*", "~"),
      39: ("ö", "Ö"), 40: ("ä", "Ä"), 41: ("^", "°"), 43: ("#", "'"), 51: (",", ";"),
      52: (".", ":"), 53: ("-", "_"), 57: (" ", " "), 86: ("<", ">", "|")}

LAYOUTS = {"us": US, "uk": UK, "de": DE}


def char(layout, code, shift=False, altgr=False, caps=False):
    """The character a key types, or None for a key this layout does not type."""
    if code in KEYPAD:
        return KEYPAD[code]
    keys = layout.get(code)
    if keys is None:
        return None
    if altgr:
        return keys[2] if len(keys) > 2 else None
    plain = keys[0]
    if caps and plain.isalpha() and len(plain) == 1 and "a" <= plain <= "z":
        shift = not shift
    return keys[1] if shift else plain


def strokes(layout):
    """char -> (code, shift, altgr): how a scanner of this layout types each character (the
    virtual scanner's side; main keys, never the keypad)."""
    out = {}
    for code in sorted(layout):
        for i, ch in enumerate(layout[code]):
            out.setdefault(ch, (code, i == 1, i == 2))
    return out
