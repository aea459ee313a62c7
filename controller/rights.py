"""Who may send each input of the house procedures (issue #18): ONE table, for the rights check
of issue #16 to read. `dealer` inputs may also come from a supervisor; `system` inputs come from
a device driver or the daemon itself, never from a person's command."""

DEALER, SUPERVISOR, SYSTEM = "dealer", "supervisor", "system"

REQUIRED_ROLE = {
    "no_spin": DEALER,               # the dealer or supervisor declares the spin void
    "miss_spin": SYSTEM,             # the wheel's own flag (or its revolution count)
    "number_mismatch": SYSTEM,       # the wheel driver: two numbers for one spin
    "manual_number": SUPERVISOR,     # the winning number entered by hand, with a reason
    "correct_result": SUPERVISOR,    # a published result corrected, with a reason
    "dealer_error": DEALER,          # exposed card, card to the wrong place, misdeal
    "supervisor_decision": SUPERVISOR,   # continue, replace or void after a dealer error
    "device_fault": SYSTEM,          # the daemon, from a driver's state
    "device_restored": SYSTEM,
    "shoe_loaded": DEALER,           # with a manual inspection: confirmed by a supervisor (`by`)
}
