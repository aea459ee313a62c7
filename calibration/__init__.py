import os

# OpenCV checks an image's size from its header, in every format it reads, against this limit
# before decoding; it reads the variable once, when it loads, so it is set before any import of
# cv2. No camera's photo is larger (camera_tools.MAX_PIXELS): an 8000 x 8000 TIFF took 900 MB
# and 8 s to decode before anything was said.
os.environ.setdefault("OPENCV_IO_MAX_IMAGE_PIXELS", "40000000")
