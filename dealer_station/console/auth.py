"""Accounts, sessions and login throttling for the console. No I/O; the clock is injected so
the tests can age a session or a lockout without sleeping.

Passwords are stored as scrypt hashes (hashlib.scrypt, the standard library: no compiled
dependency on the Pi). N=2**14, r=8, p=1 costs 16 MiB and some 50-100 ms on a Pi 4 core: slow
enough for a stolen hash, quick enough for a login.
"""
import base64
import hashlib
import hmac
import secrets
import time
from typing import NamedTuple

ROLES = ("dealer", "supervisor")
N, R, P = 2 ** 14, 8, 1
_DUMMY = None      # a hash checked for unknown names, so they take as long as known ones


def _b64(b):
    return base64.b64encode(b).decode()


def hash_password(password, n=N, r=R, p=P, salt=None):
    """'scrypt$N$r$p$salt$hash' (base64), the form the [console] accounts keep."""
    salt = salt or secrets.token_bytes(16)
    h = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=256 * 1024 * 1024,
                       dklen=32)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(h)}"


def hash_problem(stored):
    """Why a stored hash cannot be used, or None."""
    parts = stored.split("$") if isinstance(stored, str) else []
    if len(parts) != 6 or parts[0] != "scrypt":
        return "expected scrypt$N$r$p$salt$hash (make one with: dealer-station console-password)"
    try:
        n, r, p = (int(x) for x in parts[1:4])
        salt, h = base64.b64decode(parts[4], validate=True), base64.b64decode(parts[5], validate=True)
    except ValueError:
        return "scrypt parameters or base64 not readable"
    if n < 2 ** 10 or n & (n - 1) or not 1 <= r <= 32 or not 1 <= p <= 16:
        return "scrypt N must be a power of two >= 1024, r 1-32, p 1-16"
    if len(salt) < 8 or len(h) < 16:
        return "salt or hash too short"
    return None


def verify_password(password, stored):
    if hash_problem(stored):
        return False
    _, n, r, p, salt, h = stored.split("$")
    want = base64.b64decode(h)
    got = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r),
                         p=int(p), maxmem=256 * 1024 * 1024, dklen=len(want))
    return hmac.compare_digest(got, want)


class Account(NamedTuple):
    name: str
    role: str
    password_hash: str


class Session(NamedTuple):
    token: str       # the cookie
    csrf: str        # sent back in X-CSRF-Token with every action
    account: str
    role: str
    created: float


class Sessions:
    """Server-side sessions: a random token in an HttpOnly cookie. A session ends after
    `idle_s` without a request or `max_s` after login, whichever comes first."""

    def __init__(self, idle_s, max_s, clock=time.monotonic):
        self.idle_s, self.max_s, self.clock = idle_s, max_s, clock
        self._s = {}            # token -> [Session, last seen]

    def create(self, account, role):
        s = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), account, role, self.clock())
        self._s[s.token] = [s, s.created]
        self._purge()
        return s

    def get(self, token):
        entry = self._s.get(token) if token else None
        if entry is None:
            return None
        s, seen = entry
        now = self.clock()
        if now - seen > self.idle_s or now - s.created > self.max_s:
            del self._s[token]
            return None
        entry[1] = now
        return s

    def drop(self, token):
        self._s.pop(token, None)

    def _purge(self):
        now = self.clock()
        for t, (s, seen) in list(self._s.items()):
            if now - seen > self.idle_s or now - s.created > self.max_s:
                del self._s[t]


class LoginLimiter:
    """At most `max_failures` failed logins per key (an address, an account name) within
    `window_s`; past that the key is refused for `lockout_s`, even with the right password."""

    def __init__(self, max_failures=5, window_s=300.0, lockout_s=300.0, clock=time.monotonic):
        self.max, self.window, self.lockout, self.clock = max_failures, window_s, lockout_s, clock
        self._fails = {}         # key -> [times]
        self._locked = {}        # key -> until

    def blocked(self, *keys):
        """Seconds until these keys may try again (0: now)."""
        now = self.clock()
        left = 0.0
        for k in keys:
            until = self._locked.get(k)
            if until is not None:
                if until <= now:
                    del self._locked[k]
                else:
                    left = max(left, until - now)
        return left

    def failed(self, *keys):
        now = self.clock()
        for k in keys:
            times = [t for t in self._fails.get(k, ()) if now - t < self.window] + [now]
            self._fails[k] = times
            if len(times) >= self.max:
                self._locked[k] = now + self.lockout
                self._fails[k] = []
        if len(self._fails) > 10000:       # a spray of addresses must not grow this for ever
            self._fails = {k: v for k, v in self._fails.items() if v and now - v[-1] < self.window}

    def succeeded(self, *keys):
        for k in keys:
            self._fails.pop(k, None)


class Accounts:
    def __init__(self, accounts):
        self.by_name = {a.name: a for a in accounts}

    def check(self, name, password):
        """The Account for a right name and password, else None (an unknown name costs the
        same scrypt as a known one)."""
        global _DUMMY
        a = self.by_name.get(name)
        if a is None:
            _DUMMY = _DUMMY or hash_password("x")
            verify_password(password, _DUMMY)
            return None
        return a if verify_password(password, a.password_hash) else None
