"""A table's uplink in a simulated studio: a TCP relay between the table's edge broker and each
central node (one loopback port per node), which can be cut: open connections are reset and new
ones refused until the cut ends, as a pulled cable or a dead switch port would. TLS passes through
untouched (the bridge verifies the central tier's certificate end to end)."""
import socket
import threading
import time


class Uplink:
    def __init__(self, targets):
        """targets: the central nodes' ports on 127.0.0.1; self.ports: the relay's, in order."""
        self.targets = list(targets)
        self.cut_until = 0.0
        self.lock = threading.Lock()
        self.conns = set()
        self.closed = False
        self.listeners = []
        for t in self.targets:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            s.listen(16)
            self.listeners.append(s)
            threading.Thread(target=self._accept, args=(s, t), daemon=True,
                             name=f"uplink-{t}").start()
        self.ports = [s.getsockname()[1] for s in self.listeners]

    def down(self):
        return time.monotonic() < self.cut_until

    def cut(self, seconds):
        """Cut the link for `seconds`: every open connection dies now."""
        with self.lock:
            self.cut_until = time.monotonic() + seconds
            conns, self.conns = self.conns, set()
        for c in conns:
            _close(c)

    def _accept(self, listener, target):
        while not self.closed:
            try:
                a, _ = listener.accept()
            except OSError:
                return
            if self.down():
                _close(a)
                continue
            try:
                b = socket.create_connection(("127.0.0.1", target), timeout=2)
                b.settimeout(None)
            except OSError:
                _close(a)        # that central node is down: the bridge tries the next one
                continue
            for s in (a, b):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.conns.update((a, b))
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()
            threading.Thread(target=self._pump, args=(b, a), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        with self.lock:
            self.conns.discard(src)
            self.conns.discard(dst)
        _close(src)
        _close(dst)

    def close(self):
        self.closed = True
        for s in self.listeners:
            _close(s)
        self.cut(0)


def _close(s):
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass
