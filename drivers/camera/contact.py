"""The contact sheet of a learned deck (contact.png beside the templates): the 52 indexes under
their labels, for the technician's eye (split from labelcheck.py)."""
import cv2
import numpy as np


def contact_sheet(patches, colour=None):
    """One image of the 52 learned indexes, each under its label (a row per suit, a column per
    rank), for the technician to look over: a label wrong across the deck shows at a glance.
    `colour`: {card: its index corner in BGR, the learned box} from the photos, shown in place
    of the gray patches (red and black ink checked by eye)."""
    ranks, suits = "A23456789TJQK", "shdc"
    h, w = next(iter(patches.values())).shape
    cell_w, cell_h, top = max(w, 40) + 8, h + 26, 20
    sheet = np.full((len(suits) * cell_h + 4, len(ranks) * cell_w + 4, 3), 255, np.uint8)
    for i, u in enumerate(suits):
        for j, r in enumerate(ranks):
            c, x, y = r + u, 4 + j * cell_w, 4 + i * cell_h
            cv2.putText(sheet, c, (x, y + 14), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 1, cv2.LINE_AA)
            if colour and c in colour:
                sheet[y + top:y + top + h, x:x + w] = cv2.resize(colour[c], (w, h), interpolation=cv2.INTER_AREA)
            elif c in patches:
                sheet[y + top:y + top + h, x:x + w] = np.uint8(np.clip(patches[c] * 200, 0, 255))[..., None]
    return sheet
