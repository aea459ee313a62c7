"""The shoe session's status reports: settled STAT reports published, each with the device fault
it amounts to, and "status unstable" while they will not settle. A mixin of `ShoeSession`
(drivers/shoe_session.py); the debounce itself is shoe_status.py."""
from .events import DeviceState, ShoeStatus

# STAT's fields and the words each may take (docs/shoe-protocol.md, "Frames from the shoe")
STAT_WORDS = (("door", ("open", "closed")), ("jam", ("0", "1")), ("sensor", ("ok", "fault")),
              ("light", ("ok", "low")), ("gate", ("locked", "unlocked")))


class StatusReports:
    def _statuses(self, settled, now):
        """Publish the settled statuses, each with the fault it amounts to, then whether the
        reports will not settle; a DeviceState once per change of the faults: inside the
        ShoeStatus that changed them (one change, one event: as two, the daemon published its
        retained status twice, the first half-changed), on its own for "status unstable"."""
        for status, seq in settled:
            # a word outside the spec's (door "ajar", jam "yes") is not guessed healthy: the
            # report says null for it and the shoe is in fault until a known status settles;
            # the reason names the field, never its value (a corrupt frame's bytes may be a card)
            unknown = [name for (name, words), v in zip(STAT_WORDS, status) if v not in words]
            door, jam, sensor, light, gate = (None if name in unknown else v
                                              for (name, _), v in zip(STAT_WORDS, status))
            faults = {x for x, bad in (("door open", door == "open"), ("jam", jam == "1"),
                                       ("sensor fault", sensor == "fault"),
                                       ("low light", light == "low")) if bad}
            if unknown:
                faults.add(f"unknown status report ({', '.join(unknown)})")
            self.emit(ShoeStatus(seq, door, None if jam is None else jam == "1", sensor, light,
                                 gate, self._fault_change(faults)))
        unstable = self.status.unstable(now)
        if unstable != ("status unstable" in self.faults):
            # a contact chattering for seconds is a fault itself, until one status settles
            self._faults(self.faults ^ {"status unstable"})

    def _faults(self, faults):
        change = self._fault_change(faults)
        if change is not None:
            self.emit(change)

    def _fault_change(self, faults):
        """The DeviceState that `faults` amounts to, if they changed (None if not)."""
        faults = frozenset(faults)
        if faults == self.faults:
            return None
        self.faults = faults
        return DeviceState(self.name, "fault" if faults else "ok",
                           {"reason": ", ".join(sorted(faults))} if faults else {})
