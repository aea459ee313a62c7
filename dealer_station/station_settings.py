"""What the station core's rules read from the configuration (`Settings`), and the [timers]
section it owns (`CONFIG`): plain data, no I/O."""
from drivers.section import Key, Section


class Settings:
    """What the station's rules read from the configuration."""

    def __init__(self, table_id, profile, version="0", decision_s=0.0, insurance_s=0.0,
                 void_after_outage_s=0.0, inflight=100, wheel_auto_start=False, shoe_acks=False,
                 panel=False, archive=False, archive_rounds=1000,
                 replies_topic="dealer-station/v1/t1/replies", signer=None, staff=None,
                 broker="127.0.0.1:1883", connack_timeout_s=5.0, probe_timeout_s=5.0,
                 probe_interval_s=60.0, refused_keep=20, refused_window_s=60.0):
        self.table_id = table_id
        self.refused_keep = refused_keep            # refused commands kept per sender and
        self.refused_window_s = refused_window_s    # window, the rest counted (station_refusals)
        self.probe_timeout_s = probe_timeout_s      # the commands probe (station_probe.py)
        self.probe_interval_s = probe_interval_s
        self.commands_topic = replies_topic.rsplit("/", 1)[0] + "/commands"
        self.broker = broker                  # host:port, named in what is said about the link
        self.connack_timeout_s = connack_timeout_s
        self.signer = signer                  # signing.Signer, or None: events unsigned
        self.staff = staff                    # rights.Staff, or None: rights not enforced
        self.profile = profile
        self.version = version
        self.decision_s = decision_s
        self.insurance_s = insurance_s
        self.void_after_outage_s = void_after_outage_s
        self.inflight = inflight
        self.wheel_auto_start = wheel_auto_start
        self.shoe_acks = shoe_acks        # a protocol-v1 shoe keeps each frame until we ACK it
        self.panel = panel
        self.archive = archive                # archive at each new shoe (roulette: every
        self.archive_rounds = archive_rounds  # archive_rounds rounds)
        self.replies_topic = replies_topic    # a response topic must be this or under it

    @classmethod
    def from_config(cls, cfg, version, signer=None):
        from controller.rights import Staff
        t, b, c = cfg["timers"], cfg["broker"], cfg["commands"]
        return cls(cfg["table"]["id"], cfg["profile"], version, t["decision_s"], t["insurance_s"],
                   t["void_after_outage_s"], b["inflight"],
                   cfg["wheel"]["enabled"] and cfg["wheel"]["auto_start"],
                   cfg["shoe"]["protocol"] == "v1", cfg["panel"]["enabled"],
                   cfg["archive"]["enabled"], cfg["archive"]["keep_rounds"],
                   f"{b['topic_prefix']}/{cfg['table']['id']}/replies", signer,
                   Staff.from_config(cfg.get("staff")), f"{b['host']}:{b['port']}",
                   b["connack_timeout_s"], b["probe_timeout_s"], b["probe_interval_s"],
                   c["refused_keep"], c["refused_window_s"])


# the timers the station arms: a decision's, insurance's, and the void of a round that waited
# too long for the broker
CONFIG = Section("timers", {
    "decision_s": Key(float, 20.0, lo=0, hi=600),
    "insurance_s": Key(float, 10.0, lo=0, hi=600),
    "void_after_outage_s": Key(float, 600.0, lo=0, hi=86400),
})

# refused commands (malformed, refused by the staff rights, rejected by the engine): how many a
# sender has kept in full in the journal per window; the rest of the window's are counted, a row
# per kind and code (station_refusals.py)
COMMANDS = Section("commands", {
    "refused_keep": Key(int, 20, lo=1, hi=10000),
    "refused_window_s": Key(float, 60.0, lo=1, hi=86400),
})
