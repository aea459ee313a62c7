"""The [camera] section. Importing it imports no OpenCV: a table without a camera never loads cv2;
`build` imports the camera's modules only for a table that has one."""
from ..section import Key, Section


def _check(cfg, errors):
    cam = cfg["camera"]
    if not cam["enabled"]:
        return
    if not cfg["table"].get("calibration"):
        errors.append("table.calibration: the camera needs the zones of a calibration file")
    if cam["mode"] == "visual" and not cam["templates"]:
        errors.append("camera.templates: visual recognition needs the folder of templates")
    if cam["mode"] == "barcode" and cam["decoder"] == "pyzbar" and cam["symbology"] == "datamatrix":
        errors.append("camera.decoder: pyzbar cannot read DataMatrix, use zxing")


CONFIG = Section("camera", {
    "enabled": Key(bool, False),
    "source": Key(str, "/dev/video0"),
    "mode": Key(str, "barcode", choices=("barcode", "visual")),
    "decoder": Key(str, "zxing", choices=("zxing", "pyzbar")),
    "symbology": Key(str, "qrcode", choices=("qrcode", "code128", "datamatrix")),
    "templates": Key(str, None),
    "stable_frames": Key(int, 3, lo=1, hi=30),
    "gone_frames": Key(int, 8, lo=1, hi=300),
}, _check)


def build(c, calibration):
    """The camera of a checked [camera] section, or None. `calibration`: the parsed calibration
    file (its zones, its [camera] settings, its codebook)."""
    if not c["enabled"]:
        return None
    from drivers.codebook import codebook_from_mapping

    from .driver import CameraDriver, Zones
    from .recognize import DECODERS, Templates, VisualRecognizer
    from .video import open_source
    zones = Zones(calibration.get("zones") or {})
    source = int(c["source"]) if c["source"].isascii() and c["source"].isdigit() else c["source"]
    src = open_source(source, calibration.get("camera"))
    if c["mode"] == "barcode":
        return CameraDriver(src, zones, "barcode", DECODERS[c["decoder"]](c["symbology"]),
                            codebook_from_mapping(calibration.get("codebook")),
                            stable=c["stable_frames"], gone=c["gone_frames"])
    return CameraDriver(src, zones, "visual",
                        recognizer=VisualRecognizer(Templates.load(c["templates"])),
                        stable=c["stable_frames"], gone=c["gone_frames"])
