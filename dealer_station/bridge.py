"""`dealer-station bridge-conf --config FILE`: the table's own Mosquitto bridged to the studio's
central tier, written from the table's TOML ([bridge], [broker].topic_prefix, [table].id) so the
two never disagree. `scripts/install --bridge` puts it in /etc/mosquitto/conf.d/.

Mosquitto's own bridge does the work (docs/scale.md): the table's topics go out at QoS 1, its
commands come in; the edge's session persistent (local_cleansession false: its queue for the
bridge, up to explicit limits, survives an uplink outage), the central tier's new at every
connection (cleansession true: its `commands` subscription made anew); TLS verified against the
studio's CA. The bridge's state, retained on `<prefix>/<table>/bridge` (1 up, 0 down), is what
`bridge-check` reads before it takes a connection over."""
import argparse
import os
import re
import sys

from drivers.section import Key, Section, show

from .config import ConfigError, read_config
from .config_files import _broker

CENTRAL = re.compile(r"^(?P<host>[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:]{2,39}\]):(?P<port>[0-9]{1,5})$")
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _check_config(cfg, errors):
    b = cfg["bridge"]
    if not b["enabled"]:
        return
    central = b["central"] or []
    if not central:
        errors.append('bridge.central: the central nodes are needed, ["host:port", ...]')
    for i, a in enumerate(central):
        m = CENTRAL.match(a) if isinstance(a, str) else None
        if not m or not 1 <= int(m["port"]) <= 65535:
            errors.append(f"bridge.central[{i}]: expected \"host:port\", got {show(a)}")
    if len(set(map(str, central))) != len(central):
        errors.append("bridge.central: a node is given twice")
    if not b["ca_file"]:
        errors.append("bridge.ca_file: required: the bridge speaks TLS only")
    if bool(b["cert_file"]) != bool(b["key_file"]):
        errors.append("bridge.key_file: a client certificate needs both cert_file and key_file")
    if b["password"] and b["password_file"]:
        errors.append("bridge.password_file: give password or password_file, not both")
    if not (b["password"] or b["password_file"] or b["cert_file"]):
        errors.append("bridge.password: the table's own credentials are needed (password, "
                      "password_file or cert_file)")
    # what bridge_conf writes into mosquitto.conf must be writable there: refused here, so that
    # check-config does not pass a configuration scripts/install cannot write
    for key in ("password", "ca_file", "cert_file", "key_file"):     # username: its pattern
        if isinstance(b[key], str) and not _writable(b[key]):
            errors.append(UNWRITABLE.format(where=f"bridge.{key}"))
    if b["password_file"] and not b["password"]:
        try:
            pw = _password(b)
        except OSError:
            pw = None           # a missing or unreadable file: reported where files are checked
        if pw is not None and not _writable(pw):
            errors.append(UNWRITABLE.format(where="bridge.password_file") + " (its content)")
    if b["restart_max_s"] < b["restart_min_s"]:
        errors.append("bridge.restart_max_s: must not be below restart_min_s")
    if cfg["broker"]["host"] not in LOOPBACK:
        errors.append(f"broker.host: with a bridge the daemon talks to the table's own broker on "
                      f"localhost, not {cfg['broker']['host']!r}")


# the edge broker's bridge to the studio's central tier (docs/scale.md)
CONFIG = Section("bridge", {
    "enabled": Key(bool, False),
    "central": Key(list, None),               # ["host:port", ...] of the central nodes, TLS
    "username": Key(str, None, pattern=r"^[A-Za-z0-9._-]{1,64}$"),   # default: table.id
    "password": Key(str, None, secret=True),
    "password_file": Key(str, None),
    "ca_file": Key(str, None),
    "cert_file": Key(str, None),
    "key_file": Key(str, None),
    "protocol": Key(str, "mqttv311", choices=("mqttv311", "mqttv50")),
    "keepalive_s": Key(int, 20, lo=5, hi=600),
    "restart_min_s": Key(int, 1, lo=1, hi=60),
    "restart_max_s": Key(int, 30, lo=1, hi=600),
    # store-and-forward while the uplink is down: Mosquitto's default (1,000 messages) drops
    # the rest silently, about half an hour of one table; these hold days (docs/scale.md)
    "max_queued_messages": Key(int, 500_000, lo=10_000, hi=10_000_000),
    "max_queued_bytes": Key(int, 256 * 2 ** 20, lo=2 ** 20, hi=4 * 2 ** 30),
}, _check_config)

HEADER = ("# Written by `dealer-station bridge-conf` from {src}: edit that file and run it again\n"
          "# (scripts/install --bridge), not this one. It holds the table's bridge password: 0640.\n")


def _password(b):
    if b["password"]:
        return b["password"]
    if b["password_file"]:
        with open(b["password_file"]) as f:
            return f.read().strip()
    return None


UNWRITABLE = ("{where}: cannot be written into mosquitto.conf (empty, a space, a line break or "
              "a control character)")


def _writable(value):
    """Mosquitto's configuration has no quoting: a line break would end the value and a space
    split it. Printable characters without spaces only."""
    return bool(value) and value.isprintable() and not any(c.isspace() for c in value)


def _quoted_free(value, where):
    if not _writable(value):
        raise ConfigError([UNWRITABLE.format(where=where)])
    return value


def bridge_conf(cfg, src="the table's configuration"):
    """The conf.d text for the table's Mosquitto. cfg: a validated configuration."""
    b = cfg["bridge"]
    if not b["enabled"]:
        raise ConfigError(["bridge.enabled: false: this table has no bridge to write (set [bridge] "
                           "enabled = true, with its central, password_file and ca_file: "
                           "docs/scale.md)"])
    table = cfg["table"]["id"]
    base = f"{cfg['broker']['topic_prefix']}/{table}"
    addresses = []
    for a in b["central"]:
        m = CENTRAL.match(a)
        addresses.append(f"{m['host'].strip('[]')}:{m['port']}")
    lines = [HEADER.format(src=src),
             "# store-and-forward: what the edge keeps for the bridge while the uplink is down",
             "# (Mosquitto's default, 1000 messages, drops the rest without a word)",
             f"max_queued_messages {b['max_queued_messages']}",
             f"max_queued_bytes {b['max_queued_bytes']}",
             "",
             f"connection dealer-station-{table}",
             f"address {' '.join(addresses)}",
             "# the first node while it answers, the next ones when it does not",
             "round_robin false",
             f"bridge_protocol_version {b['protocol']}",
             "# the central tier is not Mosquitto: no bridge flag in the CONNECT",
             "try_private false",
             "# the central tier's side new at every connection (its subscription to the table's",
             "# commands made anew): a session the tier restored after a whole-tier restart could",
             "# keep a subscription that delivered nothing, for good (docs/scale.md); a command",
             "# sent meanwhile is sent again by its client (docs/protocol.md). The edge's side",
             "# stays persistent: its queue of events for the bridge survives the outage",
             "cleansession true",
             "local_cleansession false",
             f"remote_clientid dealer-station-bridge-{table}",
             f"local_clientid dealer-station-bridge-{table}",
             f"remote_username {_quoted_free(b['username'] or table, 'bridge.username')}"]
    pw = _password(b)
    if pw:
        lines.append(f"remote_password {_quoted_free(pw, 'bridge.password' if b['password'] else 'bridge.password_file')}")
    lines += [f"bridge_cafile {_quoted_free(b['ca_file'], 'bridge.ca_file')}",
              "bridge_insecure false"]
    if b["cert_file"]:
        lines += [f"bridge_certfile {_quoted_free(b['cert_file'], 'bridge.cert_file')}",
                  f"bridge_keyfile {_quoted_free(b['key_file'], 'bridge.key_file')}"]
    lines += [f"keepalive_interval {b['keepalive_s']}",
              f"restart_timeout {b['restart_min_s']} {b['restart_max_s']}",
              "# the bridge's state, retained: 1 up, 0 down (the central copy set by its will)",
              "notifications true",
              f"notification_topic {base}/bridge",
              f"topic {base}/events out 1",
              f"topic {base}/status out 1",
              f"topic {base}/bridge out 1",
              f"topic {base}/replies/# out 1",
              f"topic {base}/commands in 1",
              ""]
    return "\n".join(lines)


def _main(args):
    try:
        cfg = read_config(args.config)
        if cfg["bridge"]["enabled"]:
            errors = []
            _broker(cfg["bridge"], errors, section="bridge")
            if errors:
                raise ConfigError(errors)
        text = bridge_conf(cfg, os.path.abspath(args.config))
    except ConfigError as e:
        for line in e.errors:
            print(f"{args.config}: {line}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{args.config}: bridge.password_file: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    if args.out:
        fd = os.open(args.out + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(args.out + ".new", args.out)
    else:
        sys.stdout.write(text)
    return 0


def add_parser(sub):
    p = sub.add_parser("bridge-conf", help="the table's Mosquitto bridge to the central tier "
                       "(conf.d text) from its [bridge] configuration")
    p.add_argument("--config", required=True)
    p.add_argument("--out", help="write here (mode 0640, replaced whole) instead of stdout")
    p.set_defaults(func=_main)
