"""The cost of the outage rule's proof of life: one `alive_at` stamp, unsynced and synced.

The meta stamp of dealer_station/station_alive.py as the daemon writes it
(Journal.set_meta_unsynced: WAL, synchronous NORMAL, no fsync), against the same stamp synced
(synchronous FULL). Per stamp: the time the loop spends,
the bytes the process hands the storage layer (/proc/self/io write_bytes) and the WAL's growth.
A stamp is written only while a round is open and nothing was journaled for an interval
(every 5 s at the default void_after_outage_s 600): at most 12 a minute, none while cards flow.

    .venv/bin/python bench/bench_alive.py [--stamps 1000] [--dir DIR]

DIR: where the journal goes (default a temporary folder: say which file system it is on; the
Pi's SD card is what counts: an fsync there costs ~2-8 ms, docs/install.md "Storage")."""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from dealer_station.journal import Journal  # noqa: E402


def write_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0


def measure(folder, stamps, sync):
    path = os.path.join(folder, f"alive-{'sync' if sync else 'nosync'}.sqlite")
    j = Journal(path, "bench", "luxury21")
    j.set_meta("alive_at", "0")
    # a checkpoint of the WAL now, so its growth below is the stamps' (autocheckpoint at 1000
    # pages may still fold it back in between: the WAL size is then the remainder)
    j.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = path + "-wal"
    b0, t0 = write_bytes(), time.perf_counter()
    for i in range(stamps):
        (j.set_meta if sync else j.set_meta_unsynced)("alive_at", f"{1_800_000_000 + i * 5:.3f}")
    t = time.perf_counter() - t0
    b = write_bytes() - b0
    size = os.path.getsize(wal) if os.path.exists(wal) else 0
    j.close()
    return {"sync": sync, "stamps": stamps, "us_per_stamp": round(t / stamps * 1e6, 1),
            "write_bytes_per_stamp": round(b / stamps), "wal_bytes": size}


def main():
    from cli_args import parse, positive   # bench/: strict by hand; scripts/bench passes all
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stamps", type=positive, default=1000)
    ap.add_argument("--dir", default=None)
    a = parse(ap)
    with tempfile.TemporaryDirectory(dir=a.dir) as folder:
        for sync in (False, True):
            print(measure(folder, a.stamps, sync))


if __name__ == "__main__":
    main()
