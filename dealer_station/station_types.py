"""The station core's vocabulary: the events it takes and the effects it returns (plain data).

Device events are the drivers' own typed events (drivers/events.py). The others come from the
shell: the MQTT link, the timer, the loop. Effects are carried out by the shell, in order; the
first effect of an input is always its `Record` (one journal transaction), so nothing that follows
(a publish, a shoe ACK, a command's PUBACK) can happen for an input that was not kept.
"""
from typing import NamedTuple


class Clock(NamedTuple):
    wall: float      # seconds since the epoch: journaled (`at`), audit entries' `at`
    mono: float      # monotonic seconds: timers
    # seconds since the epoch when the daemon received the event (its queue's stamp), put on
    # the input and its outputs as `ts`; None: `wall` (an event the loop raised itself)
    received: float | None = None
    # the shell's facts about the wall clock (clock_facts.py), for the outage rule
    # (station_alive.py): synchronised (None: nothing said, taken as not), and this boot's id
    synced: bool | None = None
    boot: str | None = None

    @property
    def received_mono(self):
        """`mono` when the event was received (put on the loop's queue): a deadline judged by it
        is judged as the loop's timers are (an input received before it counts, however late the
        loop handled it)."""
        return self.mono if self.received is None else self.mono - max(0.0, self.wall - self.received)


# -- events from the shell ---------------------------------------------------------------------

class Command(NamedTuple):
    """A message on the commands topic, as paho delivered it."""
    payload: bytes
    response_topic: str | None = None
    correlation: bytes | None = None
    mid: int | None = None
    qos: int = 1
    user: str | None = None   # the login, when it came on commands/<user> (the broker's ACL)


class Published(NamedTuple):
    """The broker acknowledged the event with this table sequence number (PUBACK)."""
    seq: int


class BrokerConnecting(NamedTuple):
    """The link opened its socket and sent CONNECT: a broker answers within milliseconds, so a
    CONNACK not come within `broker.connack_timeout_s` is said (station_broker.py)."""


class BrokerUp(NamedTuple):
    session_present: bool


class Why:
    """What kind of end the broker link reported, a short code beside its text: the station
    groups causes and words its line by the kind, never by the text (mqtt_link.py's wording,
    paho's, the TLS layer's)."""
    LOST = "lost"                       # an accepted connection ended
    CONNACK = "connack"                 # the broker's CONNACK refused it (its reason code)
    NOT_MQTT = "not_mqtt"               # closed or answered with bytes paho cannot read, no CONNACK
    TLS_DROPPED = "tls_dropped"         # a TLS connection dropped before its CONNACK (any TLS text)
    CONNECT_FAILED = "connect_failed"   # the TCP or TLS connect itself failed
    SUBSCRIBE = "subscribe"             # the subscription to commands refused
    PUBLISH = "publish"                 # a publish refused (a v5 PUBACK error: the ACL)
    NO_ANSWER = "no_answer"             # no CONNACK within connack_timeout_s (the station's watch)


class BrokerDown(NamedTuple):
    """The link is down (`refused`: the broker or the network would not have it, said once per
    cause). `unanswered`: this ended a CONNECT that got no answer at all (a CONNECT not
    answered in time was said already, station_broker.py). `kind`: a `Why` code (None: the
    text alone is the cause)."""
    reason: str
    refused: bool = False
    unanswered: bool = False
    kind: str | None = None


class ProbeRefused(NamedTuple):
    """The broker refused the publish of the station's commands probe (its PUBACK's reason)."""
    reason: str


class TimerDue(NamedTuple):
    """The deadline of the last `Timer` effect has passed."""


class LocalInput(NamedTuple):
    """An engine input from a tool or a test, not from a device or the broker."""
    body: dict
    origin: str = "local"


class Stop(NamedTuple):
    pass


class ResendRows(NamedTuple):
    """The journal's outbox rows (seq, message) from `lo` to `hi`, read for a `ResendPage`."""
    lo: int
    hi: int
    rows: list


# -- effects -------------------------------------------------------------------------------------

class Record(NamedTuple):
    """One journal transaction: the input as input number `n`, its outputs in the outbox, the
    command's reply under its sender and id, and a checkpoint of the table after it (or None)."""
    n: int
    at: float
    origin: str
    body: dict
    shoe_seq: int | None
    messages: tuple          # ((seq, message text), ...)
    command_id: str | None
    reply: dict | None
    checkpoint: dict | None
    audit: tuple = ()        # ((entry text, hash), ...) for the audit log, same transaction
    sender: str = ""         # the command's sender (the login of commands/<login>, "" for
                             # `commands`): its id is that sender's own (journal `commands`)


class Refuse(NamedTuple):
    """A refused command kept in the journal: a malformed one's row of `refused`, or (`counted`
    given: (window start, this one's wall time)) one more counted on the sender's
    `refused_counts` row of that window, kind and code (station_refusals.py: `kind` malformed,
    rights or engine; the kept rights and engine refusals are audit entries and inputs)."""
    origin: str
    code: str
    reason: str
    payload: bytes
    sender: str = ""
    counted: tuple = None
    kind: str = "malformed"
    # a counted engine or rights refusal: (its sender's own login, its reply), its id journaled
    # with the count (table counted_ids) so a resend after a restart is a `duplicate`, never
    # applied
    remember: tuple = None


class Audit(NamedTuple):
    """An audit log entry on its own (a staff decision that never reached the engine)."""
    entry: tuple             # (entry text, hash)
    # a command refused by the staff rights: (its sender, its reply), its id journaled with the
    # entry (table counted_ids) so a copy is a `duplicate`, never judged again (ids41)
    remember: tuple = None


class AckShoe(NamedTuple):
    seq: int


class AckCommand(NamedTuple):
    mid: int | None
    qos: int


class Reply(NamedTuple):
    payload: dict
    response_topic: str | None
    correlation: bytes | None


class Publish(NamedTuple):
    seq: int
    message: str


class MarkSent(NamedTuple):
    seq: int


class Probe(NamedTuple):
    """Publish this loopback probe on the table's own `commands` topic (station_probe.py)."""
    payload: bytes


class ResendPage(NamedTuple):
    """Read the outbox rows from `lo` to `hi` (at most station_resend.PAGE) and queue them back to
    the loop as a `ResendRows` event, behind what is queued already (station_resend.py)."""
    lo: int
    hi: int


class Timer(NamedTuple):
    """Wake the station with TimerDue at this monotonic time; None: no timer."""
    deadline: float | None


class Status(NamedTuple):
    """Publish this retained status. Made only while the broker is connected (a status travels
    through the broker: it says so), and once more on every connect (station_broker.py)."""
    doc: dict


class Refresh(NamedTuple):
    """The station's status changed: the local views (the console) read it again. Whatever the
    broker's state: the console is not behind the broker."""


class Lights(NamedTuple):
    view: dict


class WheelCommand(NamedTuple):
    name: str


class SetMeta(NamedTuple):
    key: str
    value: str
    sync: bool = True    # False: written without a sync (losing it to a power cut is harmless)


class Count(NamedTuple):
    name: str
    labels: tuple = ()


class Archive(NamedTuple):
    """Archive the journal's old shoes (or rounds) now, and prune them (dealer_station/archive.py)."""


class Log(NamedTuple):
    level: str       # debug, info, warning, error
    text: str
