"""The scenario's faults carried out on the simulated table (a part of `Harness`, harness.py):
on the devices at once (the shoe's frames and cards, the wheel, the broker, the daemon, the
betting system's messages), or kept in `pending_fault` for the dealer's moment (staff.py)."""
import signal
import time

from controller.cards import CARDS

from . import scenario


class FaultInjection:
    """A mixin of `Harness`: its devices, betting system and fault counters are the harness's."""

    def _fault(self, name):
        if name == "broker_restart" and not self.broker:
            self.say("fault skipped: broker_restart (the broker given with --broker is not ours)")
            return
        self.injected[name] += 1
        w, s = self.wheel, self.shoe
        if name in scenario.CLIENT_FAULTS:
            self.bs.lose[name.removeprefix("lost_")] += 1     # the next one is lost
        elif name in scenario.WHEEL_FAULTS:
            {"miss_spin": w.miss_spin_next, "failed_launch": lambda: w.failed_launch_next(400),
             "no_ball": lambda: w.no_ball_next(400), "garbled_packet": w.garble_next}[name]()
        elif name in ("corrupt_frame", "drop_frame", "unreadable_card", "double_fire"):
            {"corrupt_frame": s.corrupt_next, "drop_frame": s.drop_next,
             "unreadable_card": s.unreadable_next, "double_fire": s.double_fire_next}[name]()
        elif name in scenario.HID_FAULTS:
            {"partial_code": s.partial_next, "wrong_layout": s.wrong_layout_next}[name]()
        elif name == "foreign_card":
            if self.profile.shuffle_every_round:
                # a fresh 8-deck shoe every round: one card of another deck cannot be read more
                # often than the shoe holds, so by the rule book it passes as a genuine card
                genuine = s.cards[s.next]
                s.foreign_next(CARDS[(CARDS.index(genuine) + 1) % 52])   # in its place
                self.say("fault: a foreign card slipped in (undetectable by count: one round per shuffle)")
            else:
                self.foreign_armed = True
                self._plant_foreign()
        elif name == "unplug_shoe":
            s.unplug()
            time.sleep(0.5)
            s.replug()
        elif name in ("card_out_of_turn", "camera_disagrees") or name in scenario.PROCEDURES:
            # at the next decision / card laid / spin / result
            if name == "double_number":
                w.double_number_next()
            else:
                if name == "no_spin":
                    # the ball leaves the wheel before the pit boss's command: no number can
                    # beat the command to the table, however slow the machine
                    w.ball_out_next()
                self.pending_fault.append(name)
        elif name == "broker_restart":
            self.broker.kill()
            time.sleep(0.8)
            self.broker.start()
        elif name == "daemon_kill":
            self.daemon.send_signal(signal.SIGKILL)
            self.daemon.wait()
            self._start_daemon()
        self.say(f"fault injected: {name}")

    def _plant_foreign(self):
        planted = self.shoe.plant_foreign()
        if planted:
            self.say(f"fault: a foreign {planted[0]} hidden at card {planted[1] + 1} of the shoe")
