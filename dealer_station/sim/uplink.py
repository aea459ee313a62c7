"""A table's uplink in a simulated studio: a TCP relay between the table's edge broker and each
central node (one loopback port per node), which can be cut. A cut resets every open connection,
and until it ends every new one is reset as soon as it is accepted, as by an unreachable studio
network; so is a connection to a central node that is down (the relay carries nothing it cannot
deliver). The ports stay bound throughout: a port closed for the outage could be taken meanwhile
as the local port of some other connection on the machine, and not be had back. TLS passes through untouched: the bridge
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
        threading.Thread(target=self._accept, args=(s, i), daemon=True,
                         name=f"uplink-{self.targets[i]}").start()

    def _reset_all(self):
        with self.lock:
            conns, self.conns = self.conns, set()
        for c in conns:
            _close(c, reset=True)

    def cut(self):
        self.is_cut = True
        self._reset_all()

    def restore(self):
        self.is_cut = False

    def node(self, i, up):
        """Central node i went down (its connections end with it) or came back."""
        self.node_up[i] = up

    def _accept(self, listener, i):
        target = self.targets[i]
        while True:
            try:
                a, _ = listener.accept()
            except OSError:
                return                     # closed: the end
            if self.is_cut or not self.node_up[i]:
                _close(a, reset=True)      # nothing gets through
                continue
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
        for s in self.listeners:
            _close(s)
        self._reset_all()


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
