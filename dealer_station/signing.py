"""The signed, hash-chained event stream (docs/protocol.md, "Game integrity").

Every message on the events topic is compact JSON that ends with three fields:

    {"seq":118,"table":"t1","v":1, ...the output..., "prev":"<hex>","sig":"<base64>"}

- `prev`: SHA-256 (hex) of the exact bytes of the message with sequence number seq-1
  (64 zeros before seq 1). Dropping, swapping or replaying a message breaks the chain.
- `sig`: Ed25519 over the exact bytes of the message up to `,"sig":"`, closed by `}`: that is,
  the message with its `sig` field cut off. A consumer checks it without re-encoding any JSON.

Ed25519, not HMAC-SHA256: the betting system (and an auditor, a regulator) verifies with the
table's public key and cannot sign; with a shared HMAC key every verifier could also forge
results. Signatures are deterministic (RFC 8032), so a message rebuilt from the same fields is
byte-identical; the daemon signs once, when the message enters the journal's outbox, and
publishes, republishes after a crash and resends those stored bytes.

The private key is a PEM (PKCS#8) file readable by its owner only: a key that the group or the
world may read is refused (as ssh does), since anyone who reads it can sign results.
"""
import base64
import errno
import hashlib
import json
import os
import stat

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

GENESIS = "0" * 64
SIG_MARK = ',"sig":"'
# fields the table adds around an engine output (consumers strip them to compare with replay)
ENVELOPE = ("seq", "table", "v", "ts", "prev", "sig")


class KeyFileError(ValueError):
    pass


def digest(text):
    """The chain hash of one message (its exact UTF-8 bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chain_entry(prev, doc):
    """An audit log entry: (its JSON text, with `prev` the hash of the entry before, and that
    text's SHA-256). Verified by `dealer-station verify JOURNAL`."""
    text = json.dumps({**doc, "prev": prev}, separators=(",", ":"), ensure_ascii=False,
                      sort_keys=True)
    return text, digest(text)


def _raw_public(public):
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public):
    """A short name for a public key: the first 16 hex digits of SHA-256 of its 32 raw bytes."""
    return hashlib.sha256(_raw_public(public)).hexdigest()[:16]


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return os.fstat(f.fileno()), f.read(16384)
    except OSError as e:
        raise KeyFileError(f"{what} {path}: {e.strerror}") from None


def load_private(path):
    """An Ed25519 private key from a PEM file that only its owner may read."""
    st, data = _read(path, "signing key")
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(f"signing key {path}: mode {stat.S_IMODE(st.st_mode):04o} lets others read "
                           f"it (anyone who reads it can sign results): chmod 600 {path}")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise KeyFileError(f"signing key {path}: not an unencrypted PEM private key ({e})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"signing key {path}: not an Ed25519 key "
                           f"(make one with: dealer-station keygen --out {path})")
    return key


def load_public(path):
    """An Ed25519 public key: a PEM file, or the 32 raw bytes in base64 on one line."""
    _, data = _read(path, "public key")
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            key = serialization.load_pem_public_key(data)
        else:
            key = Ed25519PublicKey.from_public_bytes(base64.b64decode(data.strip(), validate=True))
    except (ValueError, TypeError) as e:
        raise KeyFileError(f"public key {path}: not a PEM or base64 Ed25519 public key ({e})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"public key {path}: not an Ed25519 key")
    return key


def _why_not_written(path, e):
    """What to do about a key file that could not be created, by cause."""
    folder = os.path.dirname(os.path.abspath(path))
    if e.errno == errno.EEXIST:
        return f"signing key {path}: already exists (an existing key is never overwritten)"
    if e.errno == errno.ENOENT and not os.path.isdir(folder):
        return (f"signing key {path}: the folder {folder} does not exist; create it first "
                f"(sudo install -d -m 0750 {folder})")
    if e.errno in (errno.EACCES, errno.EPERM):
        return (f"signing key {path}: the folder {folder} is not writable by this user "
                f"(run keygen as its owner, e.g. with sudo)")
    return f"signing key {path}: {e.strerror}"


def generate(path):
    """A new key pair: `path` (private, mode 0600, never overwritten) and `path`.pub (public PEM).
    Returns the key id."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        raise KeyFileError(_why_not_written(path, e)) from None
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    pub = key.public_key()
    with open(path + ".pub", "wb") as f:
        f.write(pub.public_bytes(serialization.Encoding.PEM,
                                 serialization.PublicFormat.SubjectPublicKeyInfo))
    return key_id(pub)


class Signer:
    """Seals message texts: pure computation once the key is loaded (the station core uses it)."""

    def __init__(self, private):
        self.key = private
        self.kid = key_id(private.public_key())

    def seal(self, body):
        """`body`: compact JSON text of an object (its last field `prev`). Returns the message."""
        sig = base64.b64encode(self.key.sign(body.encode("utf-8"))).decode("ascii")
        return f"{body[:-1]}{SIG_MARK}{sig}\"}}"


def split(text):
    """(signed part, signature bytes) of a message, or (text, None) when it has no `sig`."""
    i = text.rfind(SIG_MARK)
    if i < 0 or not text.endswith('"}'):
        return text, None
    coded = text[i + len(SIG_MARK):-2]
    try:
        sig = base64.b64decode(coded, validate=True)
    except ValueError:
        return text, None
    # canonical base64 only: the decoder ignores a last character's unused bits, so without this
    # check a changed byte there would leave the signature valid (found by the property test)
    if base64.b64encode(sig).decode("ascii") != coded:
        return text, None
    return text[:i] + "}", sig


def signature_ok(text, public):
    body, sig = split(text)
    if sig is None:
        return False
    try:
        public.verify(sig, body.encode("utf-8"))
        return True
    except InvalidSignature:
        return False
