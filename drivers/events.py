"""Typed events that drivers emit (onto the daemon's queue; a driver never calls the engine).

Events that the round controller consumes have `as_input()`, the protocol v1 input. The others
describe a device's health for the status topic, the panel and the logs.
"""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CardRead:
    card: str
    source: str = "shoe"
    confidence: int | None = None   # the reader's confidence 0-100, when it gives one
    seq: int | None = None          # the shoe's frame sequence number (protocol v1)
    payload: str | None = None      # the barcode payload (line mode)

    def as_input(self):
        return {"type": "card", "card": self.card, "source": self.source}


@dataclass(frozen=True)
class CardUnreadable:
    source: str = "shoe"
    detail: dict = field(default_factory=dict)
    # The shoe's frame sequence number when this stands for a frame in its sequence (journaled and
    # acknowledged like a CardRead, so the shoe does not send it again after a restart); None for
    # line mode, the camera, and reports outside the sequence (a conflict, a previous boot).
    seq: int | None = None

    def as_input(self):
        return {"type": "card_unreadable", "source": self.source, "detail": dict(self.detail)}


@dataclass(frozen=True)
class CutCard:
    seq: int | None = None

    def as_input(self):
        return {"type": "cut_card"}


@dataclass(frozen=True)
class DeviceState:
    """connected / disconnected / fault / ok, once per change, with the reason."""
    device: str
    state: str
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ShoeHello:
    model: str
    firmware: str
    serial: str
    boot: int
    last_seq: int


@dataclass(frozen=True)
class ShoeStatus:
    """The shoe's own status report: door, jam, sensor, light, gate; and the change of the
    shoe's fault state it makes, if any (`change`: the DeviceState it amounts to, carried in
    this one event so that one change of the shoe is one step of the daemon)."""
    seq: int | None
    door: str
    jam: bool
    sensor: str
    light: str
    gate: str
    change: DeviceState | None = None


@dataclass(frozen=True)
class ShoePosition:
    """A STAT frame delivered: its number, for the owner to acknowledge and keep as the point a
    restart resumes from. Reported for every STAT frame, at delivery, in the shoe's order (the
    status it carries goes out later, once settled, as ShoeStatus tagged with the frame that
    began it, or never, when it bounced)."""
    seq: int


@dataclass(frozen=True)
class CardSeen:
    """The camera saw a card settle in a zone (drivers/camera)."""
    card: str
    zone: str

    def as_input(self):
        return {"type": "card_seen", "card": self.card, "zone": self.zone}


@dataclass(frozen=True)
class CardGone:
    card: str
    zone: str


@dataclass(frozen=True)
class PanelPress:
    """A dealer-panel button (drivers/panel.py)."""
    button: str
    armed: bool = False     # for `void`: whether the pit boss key was on


@dataclass(frozen=True)
class WheelState:
    """The roulette wheel's status (drivers/wheel.py)."""
    state: int
    name: str
    spin: int
    flags: int
    rpm: float
    direction: str


@dataclass(frozen=True)
class WinningNumber:
    number: int
    spin: int
    source: str            # "status" (state 5), "line" (the winning-number line), "late"


@dataclass(frozen=True)
class WheelReply:
    """The wheel's answer to a command (*P, *u, *X, ...)."""
    command: str
    text: str


@dataclass(frozen=True)
class WheelException:
    kind: str              # miss_spin, failed_launch, no_ball, component_fault, number_mismatch
    spin: int | None
    detail: dict = field(default_factory=dict)
