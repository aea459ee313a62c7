"""The camera's newest frame as JPEG, with its zones drawn, for the pit-boss page. Read on a web
thread from the capture thread's newest frame (a copy: the driver's thread is not slowed)."""


def jpeg(camera, width=960):
    if camera is None:
        return None
    frame = camera.capture.peek()
    if frame is None:
        return None
    import cv2
    out = camera.zones.draw(frame)
    h, w = out.shape[:2]
    if w > width:
        out = cv2.resize(out, (width, int(h * width / w)), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, 80])
    return buf.tobytes() if ok else None
