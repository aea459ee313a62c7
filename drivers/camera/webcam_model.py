"""The faults of a real cheap webcam and of a real printed card, which every technician's photo
has (issue 17) and the first camera model lacked: it drew ideal black and red ink on pure white
stock, a flat table, a pinhole camera looking exactly straight down and one noise sample per
channel, all kinder than a real photo. Here each photo gets them, mildly and at random; the four
WEBCAM_FAULTS conditions push one of them to what a bad camera or room gives. Deterministic from
the random generator passed in; tests and benchmark only."""
import math

import cv2
import numpy as np

# each one fault every photo has a little of, pushed hard
WEBCAM_FAULTS = ("low_res", "overexposed", "tungsten", "wide_lens")


def motion_blur(f, rng):
    """A card still moving, or a long exposure: a 4-7 pixel linear streak at any angle."""
    n = int(rng.integers(4, 8))
    k = np.zeros((n, n), np.float32)
    k[n // 2, :] = 1 / n
    k = cv2.warpAffine(k, cv2.getRotationMatrix2D(((n - 1) / 2, (n - 1) / 2), rng.uniform(0, 180), 1), (n, n))
    return cv2.filter2D(f, -1, k / max(k.sum(), 1e-6))


def printed(face, rng):
    """A printed card, not its file: cream or off-white stock (blue lowest), ink a dark grey and
    a dull red rather than the file's pure black and red (ink is never a perfect absorber), and
    the paper's fibre as a faint mottle. BGRA in, BGRA out."""
    f = face[..., :3].astype(np.float32) / 255
    paper = np.float32([rng.uniform(208, 230), rng.uniform(224, 240), rng.uniform(234, 250)])
    ink = np.float32(rng.uniform(25, 55) + rng.uniform(-4, 4, 3))
    out = ink + f * (paper - ink)
    # saturated ink (red) is duller: it takes some of its own colour as well
    out *= (1 - rng.uniform(0.08, 0.2) * (f.max(axis=2) - f.min(axis=2)))[..., None]
    h, w = f.shape[:2]
    fibre = cv2.GaussianBlur(rng.normal(0, 1, (h, w)).astype(np.float32), (0, 0), 1.2)
    fibre *= rng.uniform(0.015, 0.03)
    blotch = cv2.GaussianBlur(rng.normal(0, 1, (h, w)).astype(np.float32), (0, 0), 10) * 0.08
    out *= (1 + fibre + blotch)[..., None]
    res = face.copy()
    res[..., :3] = np.clip(out, 0, 255).astype(np.uint8)
    return res


def textured(frame, rng):
    """A real table is not flat colour: stains and wear (broad, a few per cent) and a fine grain
    the laminate's print or the felt's nap leaves (in place)."""
    h, w = frame.shape[:2]
    broad = cv2.resize(rng.normal(0, 0.02, (h // 32 + 2, w // 32 + 2)).astype(np.float32), (w, h),
                       interpolation=cv2.INTER_CUBIC)
    fine = cv2.GaussianBlur(rng.normal(0, 1, (h, w)).astype(np.float32), (0, 0), 1.5)
    fine *= rng.uniform(0.02, 0.04)
    f = frame.astype(np.float32) * (1 + broad + fine)[..., None]
    frame[:] = np.clip(f, 0, 255).astype(np.uint8)


def lay_real(frame, face, quad, rng):
    """Lay a printed card as it lies on a real table (in place): under the room's light it casts
    a soft drop shadow a few pixels to one side, besides the contact shadow; and its 0.3 mm of
    thickness (1.4 pixels at this scale) shows as a band of shaded stock up to a pixel wide along
    the side turned from the camera (seen 10-30 degrees off straight down: the card off the
    lens's axis, its edge lifted a little), which widens the outline the finder sees."""
    h, w = face.shape[:2]
    # only the card's neighbourhood: the shadow reaches 6 + 3 x 6 pixels beyond it
    x0, y0 = (max(int(v) - 30, 0) for v in np.min(quad, axis=0))
    x1 = min(int(np.max(quad[:, 0])) + 31, frame.shape[1])
    y1 = min(int(np.max(quad[:, 1])) + 31, frame.shape[0])
    roi = frame[y0:y1, x0:x1]
    m = cv2.getPerspectiveTransform(np.float32([[0, 0], [w, 0], [w, h], [0, h]]),
                                    np.float32(quad) - np.float32([x0, y0]))
    size = (x1 - x0, y1 - y0)
    a = cv2.warpPerspective(face[..., 3], m, size).astype(np.float32) / 255

    def shifted(d, ang):
        return cv2.warpAffine(a, np.float32([[1, 0, d * math.cos(ang)], [0, 1, d * math.sin(ang)]]), size)

    f = roi.astype(np.float32)
    drop = cv2.GaussianBlur(shifted(rng.uniform(2, 6), rng.uniform(0, 2 * math.pi)), (0, 0),
                            rng.uniform(3, 6))
    contact = cv2.GaussianBlur(shifted(1.5, rng.uniform(0, 2 * math.pi)), (0, 0), 1.5)
    f *= (1 - rng.uniform(0.12, 0.3) * drop - 0.25 * contact)[..., None]
    edge = shifted(rng.uniform(0.3, 1.0), rng.uniform(0, 2 * math.pi))
    stock = np.percentile(face[..., :3][face[..., 3] > 200], 90, axis=0).astype(np.float32)
    f = f * (1 - edge[..., None]) + stock * rng.uniform(0.6, 0.85) * edge[..., None]
    warped = cv2.warpPerspective(face[..., :3], m, size).astype(np.float32)
    f = f * (1 - a[..., None]) + warped * a[..., None]
    roi[:] = np.clip(f, 0, 255).astype(np.uint8)


class Lens:
    """Where each pixel of the photo looks on the table: a camera tilted a little off straight
    down (0.5-3 degrees: a keystone), its cheap wide lens's barrel distortion (straight card
    edges bow out a pixel or more), and lateral chromatic aberration (red and blue imaged a
    little larger and smaller than green: colour fringes away from the centre)."""

    def __init__(self, rng, size, cond):
        w, h = size
        self.c = np.float32([w / 2, h / 2])
        self.r = math.hypot(w / 2, h / 2)
        self.k = rng.uniform(0.10, 0.16) if cond == "wide_lens" else rng.uniform(0.02, 0.06)
        f = (w / 2) / math.tan(math.radians(rng.uniform(28, 35)))      # a 56-70 degree field
        t, phi = math.radians(rng.uniform(0.5, 3)), rng.uniform(0, 2 * math.pi)
        ax = np.float64([math.cos(phi), math.sin(phi), 0])
        rot, _ = cv2.Rodrigues(ax * t)
        kmat = np.float64([[f, 0, w / 2], [0, f, h / 2], [0, 0, 1]])
        self.hom = kmat @ rot @ np.linalg.inv(kmat)
        # the keystone only: the photo's centre still sees the table's (the technician frames
        # the card; the tilt alone moved the scene up to 40 pixels, a card off the photo's edge)
        c = self.hom @ np.float64([w / 2, h / 2, 1])
        move = np.float64([[1, 0, w / 2 - c[0] / c[2]], [0, 1, h / 2 - c[1] / c[2]], [0, 0, 1]])
        self.hom = move @ self.hom
        self.ca = rng.uniform(0.0005, 0.0015)

    def source(self, pts, channel=1):
        """The table points (N x 2) the photo's points look at, for channel 0 (blue), 1, 2."""
        u = (pts - self.c) / self.r
        u = u * (1 + self.k * (u * u).sum(axis=-1, keepdims=True)) * (1 + (channel - 1) * self.ca)
        p = u * self.r + self.c
        ones = np.ones(p.shape[:-1] + (1,), p.dtype)
        q = np.concatenate([p, ones], axis=-1) @ self.hom.T.astype(np.float32)
        return q[..., :2] / q[..., 2:]

    def image(self, frame):
        h, w = frame.shape[:2]
        # the maps are smooth: computed on every 8th pixel and scaled up (a remap grid at full
        # resolution cost 0.1 s a channel); the scaled map is exact 4 pixels in from the edges
        cw, ch = -(-w // 8), -(-h // 8)
        grid = np.dstack(np.meshgrid(np.arange(cw, dtype=np.float32) * 8 + 3.5,
                                     np.arange(ch, dtype=np.float32) * 8 + 3.5))
        out = []
        for c in range(3):
            m = cv2.resize(self.source(grid, c).astype(np.float32), (cw * 8, ch * 8))[:h, :w]
            out.append(cv2.remap(frame[..., c], m[..., 0].copy(), m[..., 1].copy(), cv2.INTER_LINEAR,
                                 borderMode=cv2.BORDER_REFLECT))
        return np.dstack(out)

    def project(self, pts):
        """Where table points appear in the photo (the inverse of source, by iteration)."""
        pts = np.float32(pts)
        p = pts.copy()
        for _ in range(8):
            p = p + (pts - self.source(p))
        return p


def photograph(frame, rng, cond, events):
    """The cheap webcam's photo of a table scene (BGR uint8): its lens (Lens), the room's warm
    light that auto white balance leaves a cast of, vignetting, `events` (the shadow, gloss and
    glare conditions, from camera_model), soft focus and motion, auto exposure metered on the
    whole scene (a dark felt pushes the card's white into clipping), a Bayer sensor with shot
    and read noise (the chroma noise and the colour fringes at ink edges come from its
    demosaicing), on some cameras fewer pixels than the photo scaled up, in-camera sharpening
    and JPEG with its halved colour resolution. Returns (photo, lens)."""
    h, w = frame.shape[:2]
    lens = Lens(rng, (w, h), cond)
    f = lens.image(frame).astype(np.float32)
    if cond == "tungsten":      # a warm lamp auto white balance did not correct
        wb = np.float32([rng.uniform(0.6, 0.75), rng.uniform(0.9, 1.0), rng.uniform(1.05, 1.15)])
    elif cond == "white_balance":
        wb = rng.uniform(0.75, 1.2, 3)
    else:                       # office light, corrected nearly: a little warm
        wb = np.float32([rng.uniform(0.86, 0.98), 1, rng.uniform(1.0, 1.06)]) * rng.uniform(0.96, 1.04, 3)
    f *= np.float32(wb)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((xx - w / 2) ** 2 + (yy - h / 2) ** 2) / ((w / 2) ** 2 + (h / 2) ** 2)
    f *= (1 - rng.uniform(0.15, 0.35) * r2)[..., None]
    f = events(f, rng, cond, xx, yy)
    f = cv2.GaussianBlur(f, (0, 0), rng.uniform(1.2, 1.8) if cond == "defocus" else rng.uniform(0.8, 1.4))
    if cond == "motion":
        f = motion_blur(f, rng)
    # auto exposure: the whole scene's mean brought to a target; overexposed: metered +0.6-1 EV
    target = rng.uniform(175, 210) if cond == "overexposed" else rng.uniform(115, 150)
    f *= np.float32(target / max(float(f[::4, ::4].mean()), 1.0))
    if cond == "low_res":       # a 640 x 480 or smaller sensor, its photo scaled up to 800 x 600
        s = rng.uniform(0.55, 0.8)
        f = cv2.resize(f, (int(w * s), int(h * s)), interpolation=cv2.INTER_AREA)
    raw = np.empty(f.shape[:2], np.float32)                    # BGGR: one colour a pixel
    raw[0::2, 0::2], raw[0::2, 1::2] = f[0::2, 0::2, 0], f[0::2, 1::2, 1]
    raw[1::2, 0::2], raw[1::2, 1::2] = f[1::2, 0::2, 1], f[1::2, 1::2, 2]
    shot, read = (rng.uniform(0.3, 0.6), rng.uniform(2, 4)) if cond == "noise" else \
        (rng.uniform(0.04, 0.12), rng.uniform(1, 2))
    raw += rng.normal(0, 1, raw.shape).astype(np.float32) * np.sqrt(shot * np.clip(raw, 0, 255) + read ** 2)
    out = cv2.cvtColor(np.clip(raw, 0, 255).astype(np.uint8), cv2.COLOR_BayerRG2BGR)   # bilinear
    if out.shape[:2] != (h, w):
        out = cv2.resize(out, (w, h), interpolation=cv2.INTER_LINEAR)
    out = cv2.addWeighted(out, 1.6, cv2.GaussianBlur(out, (0, 0), 2.0), -0.6, 0)
    q = int(rng.integers(60, 71)) if cond == "jpeg" else int(rng.integers(60, 91))
    return cv2.imdecode(cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, q])[1], cv2.IMREAD_COLOR), lens
