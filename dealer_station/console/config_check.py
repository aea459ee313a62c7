"""The [console] section's checks across keys, and its accounts:

    [[console.accounts]]
    name = "anna"
    role = "supervisor"          # or dealer
    password_hash = "scrypt$16384$8$1$..."   # dealer-station console-password

The accounts become auth.Account tuples. A hash is never echoed in an error."""
import re

from drivers.section import Key, Section

from .auth import ROLES, Account, hash_problem

NAME = r"^[A-Za-z0-9_.@-]{1,64}$"
ACCOUNT_KEYS = ("name", "role", "password_hash")


def _check_config(cfg, errors):
    errors += check_console(cfg["console"])
    staff = cfg.get("staff") or {}
    roles = {n: r for r in ("dealer", "supervisor", "system") for n in staff.get(r) or ()
             if isinstance(n, str)}
    if not roles:
        return          # staff rights not enforced: the console's own roles alone apply
    for i, a in enumerate(cfg["console"]["accounts"]):
        if roles.get(a.name) != a.role:
            errors.append(f"console.accounts[{i}].role: {a.name!r} acts under the table's staff "
                          f"rights: list it in [staff] {a.role} (it is "
                          f"{roles.get(a.name) or 'not there'})")


# the table console (docs/console.md)
CONFIG = Section("console", {
    "enabled": Key(bool, False),
    "bind": Key(str, "127.0.0.1", pattern=r"^[A-Za-z0-9._:\[\]-]{1,253}$"),
    "port": Key(int, 8470, lo=0, hi=65535),
    "tls_cert": Key(str, None),
    "tls_key": Key(str, None),
    "open_dealer_view": Key(bool, True),
    "session_idle_s": Key(float, 900.0, lo=30, hi=86400),
    "session_max_s": Key(float, 43200.0, lo=60, hi=7 * 86400),
    "login_failures": Key(int, 5, lo=1, hi=100),
    "login_window_s": Key(float, 300.0, lo=1, hi=86400),
    "login_lockout_s": Key(float, 300.0, lo=1, hi=86400),
    "max_streams": Key(int, 16, lo=1, hi=256),
    "accounts": Key(list, []),
}, _check_config)


def check_console(c):
    errors = []
    if bool(c["tls_cert"]) != bool(c["tls_key"]):
        errors.append("console.tls_key: TLS needs both tls_cert and tls_key")
    if c["session_max_s"] < c["session_idle_s"]:
        errors.append("console.session_max_s: must not be below session_idle_s")
    accounts, seen = [], set()
    for i, a in enumerate(c["accounts"] or []):
        where = f"console.accounts[{i}]"
        if not isinstance(a, dict):
            errors.append(f"{where}: expected a table with name, role, password_hash")
            continue
        for k in a:
            if k not in ACCOUNT_KEYS:
                shown = k if k.isprintable() and len(k) <= 40 else repr(k[:40])
                errors.append(f"{where}.{shown}: unknown key (known: {', '.join(ACCOUNT_KEYS)})")
        name, role, h = a.get("name"), a.get("role"), a.get("password_hash")
        if not isinstance(name, str) or not re.match(NAME, name):
            errors.append(f"{where}.name: 1-64 letters, digits or . _ @ -")
        elif name in seen:
            errors.append(f"{where}.name: {name!r} is given twice")
        else:
            seen.add(name)
        if role not in ROLES:
            errors.append(f"{where}.role: must be one of {', '.join(ROLES)}")
        why = hash_problem(h) if isinstance(h, str) else "missing (a string)"
        if why:
            errors.append(f"{where}.password_hash: {why}")
        if not why and role in ROLES and isinstance(name, str) and re.match(NAME, name):
            accounts.append(Account(name, role, h))
    c["accounts"] = accounts
    return errors
