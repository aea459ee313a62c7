"""The fields each output type of protocol v1 carries (docs/protocol.md, "Outputs"): what a
betting system checks every event against (`BettingSystem.check`, bettor.py)."""

# The fields every output must carry (docs/protocol.md); a message without them is a protocol error.
REQUIRED = {
    "shoe_started": ("shoe", "decks", "cards"), "card_dealt": ("round", "card", "to", "face"),
    "hole_card_revealed": ("round", "card"), "burn_complete": ("shoe", "exposed", "burned"),
    "last_round": ("shoe", "round"), "shuffle_due": ("shoe",), "round_started": ("round", "game"),
    "awaiting_card": ("round", "to", "face"), "awaiting_decision": ("round", "seat", "hand", "allowed"),
    "awaiting_result": ("round",), "insurance_offered": ("round", "insurance", "even_money"),
    "round_result": ("round", "game"), "round_paused": ("round", "reason"),
    "round_resumed": ("round",), "round_voided": ("round", "reason"),
    "irregularity": ("code", "detail"), "procedure_warning": ("code", "detail"),
    "rejected": ("input", "code", "reason"), "card_identified": ("card",),
    "card_confirmed": ("round", "card", "zone"),
    # the house procedures (issue #18)
    "device_fault": ("device", "reason", "round"), "device_restored": ("device", "round"),
    "spin_void": ("round", "reason"), "number_held": ("round", "number"),
    "result_corrected": ("round", "corrects", "voided", "result", "reason", "by"),
    "supervisor_decided": ("round", "error", "decision", "by"), "card_replaced": ("round",),
    "peek_result": ("round",), "decision_preselected": ("round", "seat", "hand"),
    "preselection_applied": ("round", "seat", "hand"), "preselection_dropped": ("round", "seat"),
}
