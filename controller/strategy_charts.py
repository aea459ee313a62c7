"""Basic-strategy charts, as a person reads them: rows are the player's hand, columns the
dealer's up card (2-9, T for any ten, A).

  H hit      S stand    P split
  D double, else hit    Ds double, else stand
  Rh surrender, else hit    Rs surrender, else stand
  Ph split when doubling after a split is allowed, else hit

STANDARD is the usual 4-8 deck chart for a dealer standing on soft 17 with a peek, doubling after
splits and no surrender (the `normal` computer player, every profile). The `hard` player uses the
chart of its profile's exact rules: luxury21 adds late surrender where luxury21 allows it (never
against an ace or a ten: only 16 against a 9 remains); european has no peek, so a dealer blackjack
takes doubles and splits too (European no-hole-card strategy: no double of 10 or 11 against a ten
or an ace, no split of 8s or aces against them); lucky7 is the standard chart.
"""

STANDARD = """
hard  2  3  4  5  6  7  8  9  T  A
5     H  H  H  H  H  H  H  H  H  H
6     H  H  H  H  H  H  H  H  H  H
7     H  H  H  H  H  H  H  H  H  H
8     H  H  H  H  H  H  H  H  H  H
9     H  D  D  D  D  H  H  H  H  H
10    D  D  D  D  D  D  D  D  H  H
11    D  D  D  D  D  D  D  D  D  H
12    H  H  S  S  S  H  H  H  H  H
13    S  S  S  S  S  H  H  H  H  H
14    S  S  S  S  S  H  H  H  H  H
15    S  S  S  S  S  H  H  H  H  H
16    S  S  S  S  S  H  H  H  H  H
17    S  S  S  S  S  S  S  S  S  S

soft  2  3  4  5  6  7  8  9  T  A
13    H  H  H  D  D  H  H  H  H  H
14    H  H  H  D  D  H  H  H  H  H
15    H  H  D  D  D  H  H  H  H  H
16    H  H  D  D  D  H  H  H  H  H
17    H  D  D  D  D  H  H  H  H  H
18    S  Ds Ds Ds Ds S  S  H  H  H
19    S  S  S  S  S  S  S  S  S  S
20    S  S  S  S  S  S  S  S  S  S

pair  2  3  4  5  6  7  8  9  T  A
2     Ph Ph P  P  P  P  H  H  H  H
3     Ph Ph P  P  P  P  H  H  H  H
4     H  H  H  Ph Ph H  H  H  H  H
5     D  D  D  D  D  D  D  D  H  H
6     Ph P  P  P  P  H  H  H  H  H
7     P  P  P  P  P  P  H  H  H  H
8     P  P  P  P  P  P  P  P  P  P
9     P  P  P  P  P  S  P  P  S  S
T     S  S  S  S  S  S  S  S  S  S
A     P  P  P  P  P  P  P  P  P  P
"""

# luxury21: late surrender, but never against an ace or a ten-value card.
LUXURY21 = STANDARD.replace(
    "16    S  S  S  S  S  H  H  H  H  H",
    "16    S  S  S  S  S  H  H  Rh H  H")

# european: no hole card, a dealer blackjack beats doubles and splits (no peek, no surrender).
EUROPEAN = (STANDARD
            .replace("11    D  D  D  D  D  D  D  D  D  H", "11    D  D  D  D  D  D  D  D  H  H")
            .replace("8     P  P  P  P  P  P  P  P  P  P", "8     P  P  P  P  P  P  P  P  H  H")
            .replace("A     P  P  P  P  P  P  P  P  P  P", "A     P  P  P  P  P  P  P  P  P  H"))
