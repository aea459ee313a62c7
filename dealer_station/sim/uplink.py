"""A table's uplink in a simulated studio: a TCP relay between the table's edge broker and each
central node (one loopback port per node), which can be cut. A cut resets every open connection
and closes the relay's ports until it ends, so the bridge's next attempts are refused as by an
unreachable studio network; a central node that is down has its port closed the same way (the
relay never accepts a connection it cannot carry). TLS passes through untouched: the bridge
verifies the central tier's certificate end to end."""
import socket
import struct
import threading


class Uplink:
    def __init__(self, targets):
        """targets: the central nodes' ports on 127.0.0.1; self.ports: the relay's, in order."""
        self.targets = list(targets)
        self.lock = threading.Lock()
        self.conns = set()
        self.is_cut = False
        self.node_up = [True] * len(self.targets)
        self.listeners = [None] * len(self.targets)
        self.ports = [0] * len(self.targets)
        for i in range(len(self.targets)):
            self._open(i)

    def _open(self, i):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.ports[i]))
        s.listen(16)
        self.ports[i] = s.getsockname()[1]
        self.listeners[i] = s
        threading.Thread(target=self._accept, args=(s, self.targets[i]), daemon=True,
                         name=f"uplink-{self.targets[i]}").start()

    def _sync(self, reset=False):
        """Each port open exactly when its node is up and the link not cut."""
        for i in range(len(self.targets)):
            want = self.node_up[i] and not self.is_cut
            if want and self.listeners[i] is None:
                self._open(i)
            elif not want and self.listeners[i] is not None:
                _close(self.listeners[i])
                self.listeners[i] = None
        if reset:
            with self.lock:
                conns, self.conns = self.conns, set()
            for c in conns:
                _close(c, reset=True)

    def cut(self):
        self.is_cut = True
        self._sync(reset=True)

    def restore(self):
        self.is_cut = False
        self._sync()

    def node(self, i, up):
        """Central node i went down (its port closes) or came back."""
        self.node_up[i] = up
        self._sync()

    def _accept(self, listener, target):
        while True:
            try:
                a, _ = listener.accept()
            except OSError:
                return                     # closed: cut, node down, or the end
            try:
                b = socket.create_connection(("127.0.0.1", target), timeout=2)
                b.settimeout(None)
            except OSError:
                _close(a, reset=True)      # as the node itself would refuse it
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
        self.node_up = [False] * len(self.targets)
        self._sync(reset=True)


def _close(s, reset=False):
    if reset:   # RST, not FIN: what a peer that is gone looks like
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    else:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    try:
        s.close()
    except OSError:
        pass
