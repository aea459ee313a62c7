"""The station core's rules for the broker link (pure: no paho, no clock, no threads).

The link (mqtt_link.py) only reports what paho saw, in paho's thread, as queue items; what is
said about it, and when, is decided here, on the loop's thread:

- a CONNECT the broker does not answer within `broker.connack_timeout_s` is said at once (a
  server that is not a broker answers never, and paho alone says so only after keepalive_s):
  the watch is a deadline of the station's timer, so no second thread touches link state;
- the end of that unanswered CONNECT (paho's keepalive, a close) is then not said again;
- a refusal is said once per cause, not on every retry: again only after a connection was
  accepted or a disconnect was said in between. A cause is the link's kind of end (a `Why`
  code) with its text, except where the text varies for one cause (a TLS drop before CONNACK);
- the line's words come from the kind: a CONNECT never answered is "not answering", not
  "refused" (a hung broker refuses nothing).

The status rule (Station.status_effects): a `Status` is made only while the broker is connected,
and one on every connect carries the state then, so nothing stale or queued while away reaches
the broker.
"""
from .station_types import Why


class BrokerWatch:
    def __init__(self, where="127.0.0.1:1883", connack_timeout_s=5.0):
        self.where = where                  # host:port, for the operator's line
        self.timeout = connack_timeout_s
        self.said = None        # the last refusal said: said once per cause until accepted
        self.deadline = None    # monotonic time a CONNACK is due by, for the CONNECT in flight
        self.silent = False     # ... that CONNECT's silence has been said
        self.answered = False   # this broker accepted this station: not a wrong port
        self.kept = None        # the broker the journal says accepted it (meta broker_answered)

    def configure(self, where, connack_timeout_s):
        """A reload's new settings: an attempt under way keeps its deadline (another broker
        has not answered yet)."""
        if where != self.where:
            self.answered = False
        self.where, self.timeout = where, connack_timeout_s

    def connecting(self, mono):
        """CONNECT sent now."""
        self.deadline, self.silent = mono + self.timeout, False

    def remember(self, where):
        """The journal's word (a previous run) on which broker accepted this station: a daemon
        restarted while that broker hangs must not say "not an MQTT broker? (check broker.host
        and broker.port)" of the broker it has used all along (cold trial: kill -STOP Mosquitto,
        restart the daemon)."""
        self.kept = where
        if where == self.where:
            self.answered = True

    def wake_at(self):
        """When the station must be woken for the watch, or None."""
        return None if self.silent else self.deadline

    def due(self, mono):
        """The refusal to say now that the CONNECT in flight went unanswered, or None."""
        if self.deadline is None or self.silent or mono < self.deadline:
            return None
        self.silent = True
        if self.answered:       # it spoke MQTT before: a wrong port is not the likely cause
            return (f"{self.where} did not answer CONNECT within {self.timeout:g} s (it accepted "
                    f"this station before: the broker overloaded, paused or hung?)")
        return (f"{self.where} did not answer CONNECT within {self.timeout:g} s: not an MQTT "
                f"broker? (check broker.host and broker.port)")

    def accepted(self):
        """A CONNACK accepted: True when the journal is to keep this broker's address (the first
        time, or another broker than the one it names)."""
        self.deadline, self.silent, self.said, self.answered = None, False, None, True
        if self.kept == self.where:
            return False
        self.kept = self.where
        return True

    def down(self, reason, refused, unanswered, kind=None):
        """The link went down: True when that is to be said (a refusal is said once per cause;
        the end of a CONNECT whose silence was said already is not said again)."""
        silent = self.silent
        self.deadline, self.silent = None, False
        if unanswered and silent:
            return False
        if not refused:
            self.said = None        # said in a row: a CONNACK refusal's retries alternate
            return True             # "refused" and "disconnected", and each is said
        return self.refusal(reason, kind)

    def refusal(self, reason, kind=None):
        """A refusal (or the CONNACK watch's silence, kind NO_ANSWER): said once per cause."""
        if _cause(kind, reason) == self.said:
            return False
        self.said = _cause(kind, reason)
        return True


def _cause(kind, reason):
    """A refusal's cause: its kind and text, but a TLS connection dropped before its CONNACK is
    one cause whatever the TLS layer said of it (the broker's "certificate required" alert, or
    an "EOF occurred in violation of protocol" when the drop is read before the alert: they
    alternate on retries). Grouped by the link's kind, not by matching its words."""
    return (kind,) if kind == Why.TLS_DROPPED else (kind, reason)


def said_as(kind, refused):
    """(level, words) of the line for a link that went down this way."""
    if kind == Why.NO_ANSWER:
        return "error", "broker not answering"
    return ("error", "broker refused") if refused else ("warning", "broker disconnected")
