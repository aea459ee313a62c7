"""A throwaway certificate authority for a simulated studio, made by openssl: the CA, a server
certificate for the central brokers (valid for 127.0.0.1 and localhost) and, on request, client
certificates. Keys stay in the work directory; nothing here is fit for production."""
import os
import shutil
import subprocess

OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"


def _run(*args, cwd):
    r = subprocess.run([OPENSSL, *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"openssl {args[0]}: {r.stderr.strip()[-300:]}")


def make_ca(directory, days=2):
    """Write ca.pem, ca.key, server.pem, server.key into directory; return their paths."""
    os.makedirs(directory, exist_ok=True)
    d = directory
    _run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", "ca.key", "-out", "ca.pem", "-days", str(days), "-subj", "/CN=studio test CA",
         cwd=d)
    issue(d, "server", "central", san="IP:127.0.0.1,DNS:localhost", days=days)
    return {k: os.path.join(d, f) for k, f in (("ca", "ca.pem"), ("cert", "server.pem"),
                                                 ("key", "server.key"))}


def issue(directory, name, cn, san=None, days=2):
    """A key and a certificate signed by the CA in directory (name.pem, name.key)."""
    d = directory
    _run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=d)
    ext = os.path.join(d, f"{name}.ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\n" + (f"subjectAltName={san}\n" if san else ""))
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", f"{name}.pem", "-days", str(days), "-extfile", ext, cwd=d)
    return os.path.join(d, f"{name}.pem"), os.path.join(d, f"{name}.key")
