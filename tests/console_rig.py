"""A simulated table with its console, played in a thread, and a headless Chromium (Debian's,
driven by Playwright): shared by tests/test_console_browser.py and bench/bench_console.py."""
import io
import os
import tempfile
import threading

from dealer_station.sim.harness import Harness

CHROMIUM = "/usr/bin/chromium"
ACCOUNTS = [("pit", "supervisor", "pit-secret-1"), ("dealer", "dealer", "dealer-secret-1")]
# the browser's received stream and what the page showed after each update (test instrumentation)
RECORD = """
window.__log = [];
const RealES = window.EventSource;
window.EventSource = function (url, opts) {
  const es = new RealES(url, opts);
  const add = es.addEventListener.bind(es);
  es.addEventListener = (type, fn, o) => add(type, type !== "view" ? fn : (ev) => {
    fn(ev);                                       // the page renders, then its text is taken
    window.__log.push([ev.data, document.body.innerText]);
  }, o);
  return es;
};
"""


class TableRun:
    """table-sim's Harness with the console on, playing `rounds` in a thread."""

    def __init__(self, profile, rounds, faults=(), speed=4.0, camera=False, pit_boss=True, seed=3,
                 wheel_times=None):
        self.dir = tempfile.mkdtemp(prefix="console-test-")
        self.h = Harness(profile, rounds, seed=seed, faults=list(faults), speed=speed,
                         plain=True, out=io.StringIO(), workdir=self.dir, camera=camera,
                         console={"accounts": ACCOUNTS}, pit_boss=pit_boss,
                         wheel_times=wheel_times)
        self.messages = []
        self.heard = threading.Condition()
        note = self.h.note

        def noted(m):
            with self.heard:
                self.messages.append(m)
                self.heard.notify_all()
            note(m)
        self.h.note = noted
        self.error = None
        self.thread = None

    def start(self):
        """The table up (daemon, devices, console), not yet playing."""
        self.h.start()
        self.url = self.h.console_url.rstrip("/")
        return self

    def play(self):
        if self.thread is None:
            self.thread = threading.Thread(target=self._play, daemon=True)
            self.thread.start()

    def _play(self):
        try:
            self.h.play(timeout=300)
        except Exception as e:      # handed to the test that waits for the end
            self.error = e

    def wait_done(self, timeout=120):
        self.play()
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError(f"the table did not finish its rounds in {timeout} s")
        if self.error:
            raise self.error

    def of_type(self, kind):
        with self.heard:
            return [m for m in self.messages if m["type"] == kind]

    def wait_for(self, kind, n=1, timeout=60):
        """The first n messages of this type the betting system received (waits for them)."""
        with self.heard:
            if not self.heard.wait_for(lambda: len(
                    [m for m in self.messages if m["type"] == kind]) >= n, timeout):
                raise TimeoutError(f"no {n} {kind} in {timeout} s")
            return [m for m in self.messages if m["type"] == kind][:n]

    def close(self):
        self.h.close()
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)


def launch(pw):
    if not os.path.exists(CHROMIUM):
        raise RuntimeError(f"{CHROMIUM} missing: ./scripts/setup installs Debian's chromium")
    return pw.chromium.launch(executable_path=CHROMIUM)


def login(page, base, name, password, next_page="/pit"):
    page.goto(f"{base}/login?next={next_page}")
    page.fill("#name", name)
    page.fill("#password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}{next_page}")
