"""Video sources behind one seam, and a capture thread that keeps only the newest frame.

A source is anything with read() -> (ok, frame): a V4L2 camera or a video file through OpenCV,
a folder of images, or a generator of frames (the virtual camera)."""
import logging
import os
import threading
import time

import cv2
import numpy as np

log = logging.getLogger(__name__)

CAMERA_PROPS = {"width": cv2.CAP_PROP_FRAME_WIDTH, "height": cv2.CAP_PROP_FRAME_HEIGHT,
                "fps": cv2.CAP_PROP_FPS, "exposure": cv2.CAP_PROP_EXPOSURE,
                "focus": cv2.CAP_PROP_FOCUS, "white_balance": cv2.CAP_PROP_WB_TEMPERATURE,
                "auto_exposure": cv2.CAP_PROP_AUTO_EXPOSURE, "autofocus": cv2.CAP_PROP_AUTOFOCUS}


# the calibration's [camera] values: (least, most, what they are); a value outside is a typing
# error or a value from another platform (DirectShow's exposure -5 is 2^-5 s, V4L2's is in
# 100 us units and positive), which V4L2 would refuse or clip without a word
RANGES = {"width": (16, 8192, "pixels"), "height": (16, 8192, "pixels"), "fps": (1, 240, "frames a second"),
          "exposure": (1, 100000, "the exposure time in the camera's units (100 us on V4L2)"),
          "focus": (0, 10000, "the lens position in the camera's units"),
          "white_balance": (1000, 15000, "a colour temperature in kelvin"),
          "auto_exposure": (0, 3, "V4L2's mode: 1 manual, 3 automatic"),
          "autofocus": (0, 1, "0 off, 1 on")}


def settings_errors(settings, where="camera"):
    """What is wrong with a calibration's [camera] table, one line a key (nothing when right)."""
    if not isinstance(settings, dict):
        return [f"{where}: expected a table of camera settings"]
    out = []
    for k, v in settings.items():
        if k not in CAMERA_PROPS:
            out.append(f"{where}.{k}: unknown camera setting (known: {', '.join(CAMERA_PROPS)})")
            continue
        lo, hi, what = RANGES[k]
        if isinstance(v, bool) and k == "autofocus":
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
            out.append(f"{where}.{k}: {v!r}: expected {lo} to {hi} ({what})")
        elif k in ("width", "height") and not float(v).is_integer():
            out.append(f"{where}.{k}: {v!r}: expected a whole number of pixels")
    return out


class VideoError(RuntimeError):
    pass


def cut_jpeg(data):
    """Whether `data` is a JPEG cut short: no end marker after the last scan's start (an EXIF
    thumbnail's own comes before it)."""
    return data[:2] == b"\xff\xd8" and data.rfind(b"\xff\xd9") < data.rfind(b"\xff\xda")


def _image(path):
    """(the image at `path`, None) or (None, what it is instead). A JPEG cut short decodes to a
    grey lower part (libjpeg says "Premature end of JPEG file" on stderr and nothing names the
    file): a frame nobody saw, so it is no image."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return None, f"cannot be read ({e.strerror})"
    if cut_jpeg(data):
        return None, "a damaged JPEG (cut short)"
    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR) if data else None
    return img, None if img is not None else "not an image"


class FolderSource:
    def __init__(self, folder, loop=False):
        exts = (".png", ".jpg", ".jpeg", ".bmp")
        names = sorted(os.listdir(folder))
        self.files = [os.path.join(folder, f) for f in names if f.lower().endswith(exts)]
        # the rest (notes.txt, a .tif, a subfolder) is never read: named, not passed over silently
        self.ignored = [f for f in names if not f.lower().endswith(exts)]
        if not self.files:
            raise VideoError(f"{folder}: no images" + (f" (only {self._names(self.ignored)}: images "
                                                        f"are .png, .jpg, .jpeg, .bmp)" if self.ignored else ""))
        if self.ignored:
            log.warning("%s: not read (not .png, .jpg, .jpeg, .bmp): %s", folder, self._names(self.ignored))
        self.i = 0
        self.loop = loop
        self.skipped = []                 # files that were no image, by name
        self.why = {}                     # and what each was

    @staticmethod
    def _names(names):
        return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    def read(self):
        """The next image. A file that is no image (a text file, a cut PNG) is skipped and named,
        as a camera drops a damaged frame and goes on: one bad frame of a recording must not hide
        every frame after it."""
        for _ in range(len(self.files)):
            if self.i >= len(self.files):
                if not self.loop:
                    return False, None
                self.i = 0
            path = self.files[self.i]
            self.i += 1
            img, what = _image(path)
            if img is not None:
                return True, img
            if path not in self.skipped:
                self.skipped.append(path)
                self.why[path] = what
                log.warning("%s: %s, skipped", path, what)
        return False, None        # looping over files none of which is an image

    @property
    def end_reason(self):
        said = []
        if self.skipped:
            said.append(f"{len(self.skipped)} file(s) skipped as not images: " + ", ".join(
                os.path.basename(p) + (" (a damaged JPEG)" if "damaged" in self.why[p] else "")
                for p in self.skipped[:5]))
        if self.ignored:
            said.append(f"not read, not .png, .jpg, .jpeg, .bmp: {self._names(self.ignored)}")
        return f"the video source ended ({'; '.join(said)})" if said else None

    def release(self):
        pass


class GeneratorSource:
    def __init__(self, frames):
        self.it = iter(frames)

    def read(self):
        try:
            return True, next(self.it)
        except StopIteration:
            return False, None

    def release(self):
        pass


def open_source(spec, settings=None):
    """`spec`: a camera index or /dev/video* path (V4L2), a video file, a folder of images, or
    an iterable of frames. `settings` (camera only): width, height, fps, exposure, focus,
    white_balance, auto_exposure, autofocus, from the calibration file."""
    if not isinstance(spec, (str, int)):
        return GeneratorSource(spec)
    if isinstance(spec, str) and os.path.isdir(spec):
        return FolderSource(spec)
    camera = isinstance(spec, int) or spec.startswith("/dev/video")
    cap = cv2.VideoCapture(spec, cv2.CAP_V4L2) if camera else cv2.VideoCapture(spec)
    if not cap.isOpened():
        raise VideoError(f"cannot open {spec!r}" + (" (is the camera connected, and the user in "
                                                     "the video group?)" if camera else ""))
    for k, v in (settings or {}).items():
        if k not in CAMERA_PROPS:
            raise VideoError(f"camera setting {k!r}: known are {', '.join(CAMERA_PROPS)}")
        cap.set(CAMERA_PROPS[k], v)
    return cap


class Capture:
    """Reads a source in its own thread; `latest()` gives the newest frame only, so processing
    that falls behind drops stale frames instead of lagging."""

    def __init__(self, source, pace=None):
        self.source = source
        self.pace = pace                  # seconds per frame for sources that do not pace themselves
        self._frame = None
        self._n = 0
        self.dropped = 0
        self._taken = 0
        self.ended = False
        self.end_reason = None            # why the source ended, when it says
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="camera-capture", daemon=True)

    def start(self):
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                ok, frame = self.source.read()
                reason = getattr(self.source, "end_reason", None)
            except Exception as e:     # noqa: BLE001 (a source that raises has ended: say why)
                ok, reason = False, f"the video source failed: {type(e).__name__}: {e}"
            if not ok:
                with self._cond:
                    self.end_reason = reason
                    self.ended = True
                    self._cond.notify_all()
                return
            with self._cond:
                if self._n > self._taken:
                    self.dropped += 1     # the previous frame was never processed
                self._frame = frame
                self._n += 1
                self._cond.notify_all()
            if self.pace:
                self._stop.wait(max(0.0, self.pace - (time.monotonic() - t0)))

    def latest(self, timeout=1.0):
        """(frame number, frame) newer than the last one taken, or (None, None)."""
        with self._cond:
            if self._n <= self._taken and not self.ended:
                self._cond.wait(timeout)
            if self._n <= self._taken:
                return None, None
            self._taken = self._n
            return self._n, self._frame

    def peek(self):
        """The newest frame without taking it (the console's picture of the table), or None."""
        with self._cond:
            return self._frame

    def close(self):
        self._stop.set()
        self._thread.join(timeout=2)
        self.source.release()
