"""The station core's devices (a part of `Station`, pure like it): the shoe's frames to the engine
and acknowledged after their record, where the shoe resumes (its HELLO's baseline), each device's
health and what holds it down, a required device's fault and return reported to the engine as
inputs, the dealer panel (its buttons as staff inputs, the pit boss key), and the wheel running
the roulette round (its automatic start, no more bets, the winning number, its exceptions).
"""
from controller import rights
from drivers.events import (CardGone, CardRead, CardSeen, CardUnreadable, CutCard, DeviceState,
                            PanelPress, ShoeHello, ShoePosition, ShoeStatus, WheelException,
                            WheelReply, WheelState, WinningNumber)

from .station_types import AckShoe, Count, Log, SetMeta, Status, WheelCommand

PANEL_INPUTS = {"shoe_loaded": {"type": "shoe_loaded"},
                "pit_boss": {"type": "pause", "reason": "pit boss called from the dealer panel"},
                "resume": {"type": "resume"},
                "void": {"type": "void_round", "reason": "voided with the pit boss key"}}
PANEL_COMMANDS = {"shoe_loaded": "shoe_loaded", "pit_boss": "pause", "resume": "resume",
                  "void": "void_round"}


class StationDevices:
    """Station's devices; the state (`devices`, `health`, `table`, `shoe_base`, `shoe_pos`) and
    `process`, `status_effects`, `_refuse_right` are Station's."""

    def _device(self, e, clock):
        if isinstance(e, (CardRead, CardUnreadable, CutCard)):
            seq = getattr(e, "seq", None)
            effects = self.process(e.as_input(), "shoe", clock, shoe_seq=seq)[0]
            if seq is not None and self.s.shoe_acks:
                effects.append(AckShoe(seq))      # only now may the shoe forget it
            return effects
        if isinstance(e, ShoePosition):
            return self._shoe_position(e.seq)
        if isinstance(e, ShoeHello):
            effects = []
            resume = self.shoe_resume()
            if resume is None or resume[0] != e.boot:
                # A shoe (or a boot of it) we have not met: its current position is the
                # baseline, so a card drawn while we are away later is asked for again.
                self.shoe_base = (e.boot, e.last_seq, self.next_n - 1)
                effects.append(SetMeta("shoe_base", ":".join(map(str, self.shoe_base))))
            self.devices["shoe"] = {**self.devices.get("shoe", {}), "model": e.model,
                                    "firmware": e.firmware, "serial": e.serial}
            return effects
        if isinstance(e, ShoeStatus):
            self.devices.setdefault("shoe", {})["report"] = {
                "door": e.door, "jam": e.jam, "sensor": e.sensor, "light": e.light, "gate": e.gate}
            bad = [why for why, on in (("door open", e.door == "open"), ("jam", e.jam),
                                       ("sensor fault", e.sensor != "ok"),
                                       ("low light", e.light != "ok")) if on]
            self._health("shoe", report=", ".join(bad) or None)
            if e.change is not None:      # the fault state this report changed, in this step
                return self._device_state(e.change, clock)
            return self._sync_faults(clock)
        if isinstance(e, PanelPress):
            return self._panel(e, clock)
        if isinstance(e, (WheelState, WinningNumber, WheelException)):
            return self._wheel(e, clock)
        if isinstance(e, CardSeen):
            return self.process(e.as_input(), "camera", clock)[0]
        if isinstance(e, WheelReply):
            # the wheel's answer to a command (run, start_game, ...): nothing to decide, counted
            # (a spin logged "event of unknown kind WheelReply dropped" for each)
            return [Count("wheel_replies_total")]
        if isinstance(e, CardGone):
            return [Count("cards_picked_up_total", (("zone", e.zone),))]
        if isinstance(e, DeviceState):
            return self._device_state(e, clock)
        return [Log("warning", f"event of unknown kind {type(e).__name__} dropped"),
                Count("events_dropped_total", (("kind", type(e).__name__),))]

    def _device_state(self, e, clock):
        """A device's link or fault state (from its driver, or inside a ShoeStatus that changed
        it): its health, the engine's device_fault / device_restored, and one status."""
        effects = []
        if e.device == "wheel" and e.state == "connected" and self.s.wheel_auto_start:
            effects += [WheelCommand("run"), WheelCommand("start_game")]
        d = self.devices.setdefault(e.device, {})
        d["state"] = e.state
        d["reason"] = e.detail.get("reason")
        level = "info" if e.state in ("connected", "ok") else "warning"
        why = e.detail.get("reason") or e.state
        if e.state == "connected":      # the line is back (a stall ends the same way)
            self._health(e.device, link=None, fault=None)
        elif e.state == "disconnected":
            self._health(e.device, link=f"disconnected: {why}")
        elif e.state == "fault":
            self._health(e.device, fault=why)
        elif e.state == "ok":
            self._health(e.device, fault=None)
        effects += [Log(level, f"{e.device} {e.state} {e.detail.get('reason') or ''}".rstrip())]
        return self._with_status(effects + self._sync_faults(clock))

    def _with_status(self, effects):
        """`effects` and the status, once: a pause, resume or void among them published it
        already, device included (two retained statuses for one change, in one step)."""
        if any(isinstance(x, Status) for x in effects):
            return effects
        return effects + self.status_effects()

    def _shoe_position(self, seq):
        """A STAT frame delivered: nothing for the engine (its status comes as ShoeStatus once
        settled), but the shoe's position moves past it. Persisted, then acknowledged (rule 10),
        so a restart resumes after it instead of meeting a HELLO far ahead of the last card."""
        effects = []
        if self.shoe_base is not None:
            self.shoe_pos = (self.shoe_base[0], seq, self.next_n - 1)
            effects.append(SetMeta("shoe_pos", ":".join(map(str, self.shoe_pos))))
        if self.s.shoe_acks:
            effects.append(AckShoe(seq))
        return effects

    def _health(self, device, **causes):
        h = self.health.setdefault(device, {})
        for cause, why in causes.items():
            if why is None:
                h.pop(cause, None)
            else:
                h[cause] = why

    def required(self):
        """The devices a round cannot be played without (the camera only cross-checks)."""
        return ("shoe", "scanner") if self.table.game.uses_cards else ("wheel",)

    def _sync_faults(self, clock):
        """RULES.md: a required device down pauses the round and holds the next betting; its
        return lets the round go on. The engine keeps which devices are down (journaled, so
        replay and recovery agree); the station reports each change of a device's health to it
        as a `device_fault` / `device_restored` input."""
        effects = []
        down = {d for d, _ in self.table.faults}
        for dev in self.required():
            h = self.health.get(dev)
            if h is None:
                continue                       # not heard from since the start: nothing known
            if h and dev not in down:
                # once each: a shoe's report and the fault its driver derived often say the same
                reason = "; ".join(dict.fromkeys(h[k] for k in sorted(h)))[:500]
                effects += self.process({"type": "device_fault", "device": dev, "reason": reason},
                                        "device", clock)[0]
            elif not h and dev in down:
                effects += self.process({"type": "device_restored", "device": dev}, "device",
                                        clock)[0]
        return effects

    def _panel(self, e, clock):
        if e.button == "key":
            self.devices.setdefault("panel", {})["key"] = e.armed
            return self.status_effects()
        if e.button == "void" and not e.armed:
            return [Log("warning", "void pressed without the pit boss key: ignored")]
        who = "panel-key" if self.devices.get("panel", {}).get("key") else "panel"
        kind = PANEL_COMMANDS[e.button]
        body = PANEL_INPUTS[e.button]
        d = rights.decide(self.s.staff, kind, who, None, body.get("reason", "pit boss key"),
                          bool(self.table.pending), panel=True)
        if d.code is not None:
            return self._refuse_right(clock, "panel", kind, None, d)
        return self.process(body, "panel", clock, decision=d, action=kind)[0]

    def _wheel(self, e, clock):
        """The wheel runs the roulette round: no more bets closes betting, the winning number
        ends the round, the guide's exceptions void it (section 4.1)."""
        t = self.table
        if isinstance(e, WheelState):
            self.devices.setdefault("wheel", {})["wheel_state"] = e.name
            effects = []
            if not e.flags & 4 and self.health.get("wheel", {}).get("component"):
                self._health("wheel", component=None)       # the sensor/motor fault cleared
                effects += self._sync_faults(clock)
            t = self.table
            if e.state == 4 and t.round is None and not t.paused and not t.faults:
                effects += self.process({"type": "betting_closed"}, "wheel", clock)[0]
            return effects
        if isinstance(e, WinningNumber):
            effects = self.process({"type": "winning_number", "number": e.number, "spin": e.spin},
                                   "wheel", clock)[0]
            if self.s.wheel_auto_start:
                effects.append(WheelCommand("start_game"))
            return effects
        effects = [Log("warning", f"wheel: {e.kind} on spin {e.spin} {e.detail}")]
        if e.kind == "component_fault":
            # RULES.md: the wheel's sensor fault pauses the round (device_fault); it goes on if
            # the fault clears in time, else the supervisor voids it
            self._health("wheel", component=f"component fault {e.detail.get('code') or e.detail.get('reason') or ''}".strip())
            d = self.devices.setdefault("wheel", {})
            d["state"], d["reason"] = "fault", e.kind
            return self._with_status(effects + self._sync_faults(clock))
        if e.kind == "number_mismatch":
            # two numbers for one spin: a malfunction (RULES.md); the engine pauses the table for
            # the supervisor, who confirms one number or voids the round
            d = e.detail
            return effects + self.process({"type": "number_mismatch", "first": d["first"],
                                           "then": d["then"], "spin": e.spin}, "wheel",
                                          clock)[0]
        if e.kind == "miss_spin":
            if t.round is not None:
                effects += self.process({"type": "miss_spin", "spin": e.spin}, "wheel", clock)[0]
            effects.append(WheelCommand("ack_void"))      # the wheel spins again from place bets
        elif e.kind in ("failed_launch", "no_ball"):
            d = self.devices.setdefault("wheel", {})
            d["state"], d["reason"] = "fault", e.kind     # first: the void's status shows it
            if t.round is not None:
                effects += self.process({"type": "void_round",
                                         "reason": f"wheel: {e.kind.replace('_', ' ')}"}, "wheel",
                                        clock)[0]
            effects = self._with_status(effects)
        return effects
