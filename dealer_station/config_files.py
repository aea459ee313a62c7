"""What `run` will open, opened and checked before it runs: the calibration file (codebook,
zones, camera settings), the camera templates, the broker's password file and TLS material, and
the journal's directory. `check-config` (systemd's ExecStartPre) and `run` both call
`check_files`, so a table that passes the check does not stop on a missing file at start.

Devices (shoe, wheel, camera, GPIO) are not opened here: a running daemon may hold them, and
their drivers reconnect on their own. Every error is one line naming `section.key`; the content of
a secret file is never shown.
"""
import ipaddress
import os
import ssl
import tomllib


def _readable(where, path, errors):
    """True if `path` is a readable regular file, else an error naming `where`."""
    try:
        with open(path, "rb") as f:
            f.read(1)
        return True
    except IsADirectoryError:
        errors.append(f"{where}: {path} is a directory, not a file")
    except OSError as e:
        errors.append(f"{where}: {path}: {e.strerror}")
    return False


# what shoe-calibrate writes (calibration/files.py save; docs/calibration.md, 7)
CALIBRATION_SECTIONS = {"calibration", "camera", "card", "codebook", "zones"}


def _calibration(cfg, errors):
    path = cfg["table"]["calibration"]
    if not path or not _readable("table.calibration", path, errors):
        return
    where = f"table.calibration: {path}"
    try:
        with open(path, "rb") as f:
            cal = tomllib.load(f)     # a payload given twice is a TOML error (duplicate key)
    except (OSError, UnicodeDecodeError) as e:
        errors.append(f"{where}: {getattr(e, 'strerror', None) or e}")
        return
    except ValueError as e:           # TOMLDecodeError, or an integer past 4300 digits
        errors.append(f"{where}: not valid TOML: {e}")
        return
    unknown = sorted(set(cal) - CALIBRATION_SECTIONS)
    if unknown:         # a typo ([cards]) would otherwise only show as "no [card]"
        errors.append(f"{where}: [{unknown[0]}]: unknown section (known: "
                      f"{', '.join(sorted(CALIBRATION_SECTIONS))})")
    from drivers.codebook import codebook_from_mapping
    cam = cfg["camera"]
    if cfg["shoe"]["protocol"] == "line" or (cam["enabled"] and cam["mode"] == "barcode"):
        try:
            codebook_from_mapping(cal.get("codebook"), where="codebook")
        except ValueError as e:
            errors.append(f"{where}: {e}")
    if cam["enabled"]:
        from drivers.camera.driver import Zones
        from drivers.camera.video import settings_errors
        settings = cal.get("camera") or {}
        wrong = settings_errors(settings)
        errors += [f"{where}: {e}" for e in wrong]
        # zones beyond the frame the camera is set to send: never seen
        size = None if wrong else (settings.get("width"), settings.get("height"))
        zones_ok = True
        try:
            Zones(cal.get("zones") or {}, frame_size=size if size and all(size) else None)
        except (ValueError, TypeError) as e:
            errors.append(f"{where}: {e}")
            zones_ok = False
        if zones_ok and cfg.get("profile") is not None:
            _zone_names(cfg["profile"], cal.get("zones") or {}, where, errors)
        if "card" in cal:
            from drivers.camera.driver import card_fit_error, measured_card
            try:
                card = measured_card(cal["card"], frame=size if size and all(size) else None)
                polygons = cal.get("zones") or {}
                # a card no zone holds: [card] measured elsewhere, not the templates' fault
                if polygons and zones_ok and card_fit_error(card, polygons):
                    errors.append(f"{where}: card: a {card[0]:.0f} x {card[1]:.0f} card fits in no "
                                  f"zone: measured in another frame? measure it again: "
                                  f"shoe-calibrate camera zones --card")
            except ValueError as e:
                errors.append(f"{where}: {e}")


def _zone_names(profile, zones, where, errors):
    """A zone the game has no place for ("seat 9", "seat_5" at a three-seat table): every card
    the camera saw there would pause the table as a misplaced card."""
    from controller.games import game_of
    from drivers.section import name as shown
    names = game_of(profile).zone_names(profile)
    for name in zones:
        if names and name not in names:
            # every one (check-config names every error), each on one line: a name with a
            # newline or a zero-width space printed raw (cold trial) split the line or hid why
            errors.append(f"{where}: zones.{shown(name)}: not a place of this table "
                          f"({profile.game}, {profile.name}: {', '.join(names)})")


def _templates(cfg, errors):
    cam = cfg["camera"]
    if not (cam["enabled"] and cam["mode"] == "visual" and cam["templates"]):
        return
    from drivers.camera.recognize import Templates
    try:
        t = Templates.load(cam["templates"])
    except (ValueError, OSError) as e:
        errors.append(f"camera.templates: {e}")
        return
    zones, card = _zones_of(cfg["table"]["calibration"])
    from drivers.camera.driver import card_fit_error, card_size_error
    why = (zones and card_fit_error(t.card_size, zones)) or (card and card_size_error(t.card_size, card))
    if why:
        errors.append(f"camera.templates: {why}")


def _zones_of(path):
    """The calibration's zones and its measured card ([card]: (width, height)) when they are
    right ({} and None otherwise: _calibration said why)."""
    from drivers.camera.driver import Zones, measured_card
    try:
        with open(path, "rb") as f:
            cal = tomllib.load(f)
    except (OSError, TypeError, ValueError, tomllib.TOMLDecodeError):
        return {}, None
    zones = cal.get("zones") or {}
    try:
        Zones(zones)
    except (TypeError, ValueError):
        zones = {}
    from drivers.camera.driver import card_fit_error
    settings = cal.get("camera") if isinstance(cal.get("camera"), dict) else {}
    size = (settings.get("width"), settings.get("height"))
    try:
        card = measured_card(cal["card"], frame=size if all(size) else None) if "card" in cal else None
    except (TypeError, ValueError):
        card = None
    if card and zones and card_fit_error(card, zones):
        card = None         # [card] itself is wrong: _calibration blames it, not the templates
    return zones, card


def _has_card(path):
    try:
        with open(path, "rb") as f:
            return "card" in tomllib.load(f)
    except (OSError, ValueError, tomllib.TOMLDecodeError):
        return True         # an unreadable calibration: _calibration says why, no warning



def _broker(b, errors, section="broker"):
    """The password file, CA, certificate and key of [broker] (or [bridge]: its files are
    checked by `dealer-station bridge-conf`, which runs as root like Mosquitto reads them)."""
    if b["password_file"] and _readable(f"{section}.password_file", b["password_file"], errors):
        with open(b["password_file"], "rb") as f:
            if not f.read().strip():
                errors.append(f"{section}.password_file: {b['password_file']} is empty")
    ok = True
    for key in ("ca_file", "cert_file", "key_file"):
        if b[key]:
            ok = _readable(f"{section}.{key}", b[key], errors) and ok
    if not ok:
        return
    ctx = ssl.create_default_context()
    if b["ca_file"]:
        try:
            ctx.load_verify_locations(cafile=b["ca_file"])
        except ssl.SSLError as e:
            errors.append(f"{section}.ca_file: {b['ca_file']}: no PEM certificate in it ({e.reason})")
    if b["cert_file"] and b["key_file"]:
        try:
            # The callback stops OpenSSL asking for a passphrase on the terminal.
            ctx.load_cert_chain(b["cert_file"], b["key_file"], password=lambda: b"")
        except ssl.SSLError as e:
            errors.append(f"{section}.cert_file: {b['cert_file']} with {b['key_file']}: cannot load "
                          f"the certificate and key (not PEM, an encrypted key, or a key that does "
                          f"not match the certificate: {e.reason})")


def _journal(path, errors):
    """The journal's file must be readable and writable, or its directory writable (or
    creatable: the nearest existing parent writable)."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        errors.append(f"paths.journal: {path} is a directory")
        return
    if os.path.exists(path):
        if not os.access(path, os.R_OK | os.W_OK):
            errors.append(f"paths.journal: {path}: not readable and writable by this user")
            return
        try:
            with open(path, "rb") as f:
                head = f.read(16)
        except OSError as e:
            errors.append(f"paths.journal: {path}: {e.strerror}")
            return
        if head and head != b"SQLite format 3\x00":
            errors.append(f"paths.journal: {path} is not an SQLite database (see 'A corrupt "
                          f"journal' in docs/install.md)")
    d = os.path.dirname(path)
    while not os.path.isdir(d):
        if os.path.exists(d):
            errors.append(f"paths.journal: {d} is not a directory")
            return
        d = os.path.dirname(d)
    if not os.access(d, os.W_OK | os.X_OK):
        errors.append(f"paths.journal: cannot create files in {d} (permissions)")
    elif os.statvfs(d).f_flag & os.ST_RDONLY:
        errors.append(f"paths.journal: {d} is on a read-only file system")


def check_files(cfg):
    errors = []
    _calibration(cfg, errors)
    _templates(cfg, errors)
    _broker(cfg["broker"], errors)
    _journal(cfg["paths"]["journal"], errors)
    c = cfg["console"]
    if c["enabled"] and c["tls_cert"]:
        import ssl
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(c["tls_cert"], c["tls_key"])
        except (OSError, ssl.SSLError) as e:
            errors.append(f"console.tls_cert: {c['tls_cert']} with {c['tls_key']}: "
                          f"{getattr(e, 'strerror', None) or e}")
    if cfg["integrity"]["signing_key"]:
        from .signing import KeyFileError, load_private
        try:
            load_private(cfg["integrity"]["signing_key"])
        except KeyFileError as e:
            errors.append(f"integrity.signing_key: {e}")
    if cfg["integrity"]["manifest"]:
        _readable("integrity.manifest", cfg["integrity"]["manifest"], errors)
    if cfg["archive"]["enabled"]:
        # the archive folder: the checks of the journal's folder, named archive.dir
        more = []
        _journal(os.path.join(cfg["archive"]["dir"], "archive.jsonl.gz"), more)
        errors += [e.replace("paths.journal: ", "archive.dir: ") for e in more]
    return errors


def _public(bind):
    if bind == "localhost":
        return False
    try:
        return not ipaddress.ip_address(bind.strip("[]")).is_loopback
    except ValueError:
        return True     # a host name: where it points is not ours to know


def config_warnings(cfg):
    """Values that work but are risky: printed by check-config, logged by run."""
    out = []
    m = cfg["metrics"]
    if m["enabled"] and m["bind"] != "localhost":
        try:
            public = not ipaddress.ip_address(m["bind"]).is_loopback
        except ValueError:
            public = True     # a host name: where it points is not ours to know
        if public:
            out.append(f"metrics.bind: {m['bind']} serves the metrics beyond this machine "
                       f"(no authentication): use 127.0.0.1 and a proxy or firewall")
    c = cfg["console"]
    if c["enabled"] and not c["tls_cert"] and _public(c["bind"]):
        out.append(f"console.bind: {c['bind']} serves the console beyond this machine without TLS "
                   f"(passwords and session cookies in clear): set tls_cert and tls_key")
    cam = cfg["camera"]
    if cam["enabled"] and cam["mode"] == "visual" and cfg["table"]["calibration"] and \
            not _has_card(cfg["table"]["calibration"]):
        out.append(f"camera.templates: {cfg['table']['calibration']} has no [card] (the card's size "
                   f"measured in the table camera's frame): templates captured at another camera "
                   f"height that still fit the zones are not caught here, and read nothing; "
                   f"measure it: shoe-calibrate camera zones --card --image PHOTO (a card in a zone)")
    b = cfg["broker"]
    if b["password"]:
        out.append("broker.password: a password in the configuration file; prefer password_file")
    return out
