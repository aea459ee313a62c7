"""A PNG bar chart drawn with OpenCV, for the calibration reports."""
import cv2
import numpy as np

from .shoe_tools import ToolError


def bar_chart(values, labels, title, path, xlabel="", ylabel="", width=720, height=420):
    """A PNG bar chart drawn with OpenCV (no plotting library on the Pi): a title, a y axis with
    ticks, each bar's value above it, the categories and the x axis named under them."""
    img = np.full((height, width, 3), 255, np.uint8)
    black, grey, font = (0, 0, 0), (200, 200, 200), cv2.FONT_HERSHEY_SIMPLEX
    left, right, top, bottom = 60, 15, 60, 65
    cv2.putText(img, title, (left, 22), font, 0.6, black, 1, cv2.LINE_AA)
    peak = max([v for v in values if v is not None] or [0])
    step = _nice_step(peak / 5 if peak > 0 else 0.2)
    ymax = step * (peak // step + 1)       # head room for the top bar's value
    plot_h = height - top - bottom

    def y_of(v):
        return int(height - bottom - plot_h * v / ymax)
    k = 0
    while k * step <= ymax + 1e-9:            # grid lines and tick labels on the y axis
        y = y_of(k * step)
        cv2.line(img, (left, y), (width - right, y), grey, 1)
        cv2.putText(img, _fmt(k * step), (5, y + 4), font, 0.4, black, 1, cv2.LINE_AA)
        k += 1
    cv2.line(img, (left, top), (left, height - bottom), black, 1)
    cv2.line(img, (left, height - bottom), (width - right, height - bottom), black, 1)
    n = max(len(values), 1)
    bw = (width - left - right) // n
    for i, (v, lab) in enumerate(zip(values, labels)):
        x = left + i * bw
        cv2.rectangle(img, (x + 3, y_of(v)), (x + bw - 3, height - bottom), (180, 110, 40), -1)
        cv2.putText(img, _fmt(v), (x + 4, y_of(v) - 4), font, 0.38, black, 1, cv2.LINE_AA)
        cv2.putText(img, str(lab), (x + 4, height - bottom + 16), font, 0.38, black, 1, cv2.LINE_AA)
    if xlabel:
        cv2.putText(img, xlabel, (left, height - 15), font, 0.45, black, 1, cv2.LINE_AA)
    if ylabel:
        cv2.putText(img, ylabel, (5, top - 14), font, 0.4, black, 1, cv2.LINE_AA)
    if not cv2.imwrite(str(path), img):
        raise ToolError(f"{path}: cannot write the PNG")
    return path


def _nice_step(raw):
    for e in range(-3, 7):
        for m in (1, 2, 2.5, 5):
            if m * 10 ** e >= raw:
                return m * 10 ** e
    return raw


def _fmt(v):
    return f"{v:.0f}" if float(v).is_integer() or abs(v) >= 10 else f"{v:.2g}"
