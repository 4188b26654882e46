#!/usr/bin/env python3
"""Reference game endings from pyffish (Fairy-Stockfish) for crates/xiangqi/tests/repetition_wxf.rs.

Usage: pyffish_repetition.py INPUT

INPUT has one case per line, as JSON:

    {"id": "...", "fen": "...", "moves": ["h3e3", ...], "plies": [8, 9, 12], "mates": [12], "also": 9}

with the moves in pyffish's coordinates (ranks 1-10). "plies" are the candidate plies (numbers of
moves played from the FEN), ascending, at which the game may have ended; they are asked in turn,
the way a game server using pyffish ends a xiangqi game:

  - no legal move: game_result()        (checkmate and stalemate both lose)
  - else is_optional_game_end()         (n-move rule, n-fold repetition, perpetual check, chase)

The caller leaves out the plies at which Fairy-Stockfish cannot end the game (legal moves, no
third occurrence of the position, fewer than 100 plies without capture). Each pyffish call costs
milliseconds (it sets the variant up every time), so legal_moves() is asked only where
is_optional_game_end() ends the game and at the plies listed in "mates" (those where the caller's
own move generator finds no legal move; move generation is compared on its own elsewhere).
"also" (optional) is one more ply to answer for, whether or not the game ended earlier.
is_immediate_game_end(), which has nothing to say in xiangqi, is asked at the last ply only, as
a check.

For every input line one output line is written to stdout, tab-separated:

    <first> <also>

<first> is the first candidate ply at which the game has ended and <also> the answer at "also",
each as "<ply>:<how>:<value>" with how = nomoves|optional, or "none" (not ended there). <value>
is Fairy-Stockfish's score from the point of view of the side to move at that ply (> 0: it wins,
< 0: it loses, 0: draw). A failure gives "error <message>". The first output line is a header:
"pyffish <version>".
"""

import json
import sys

VARIANT = "xiangqi"


def ended_at(sf, fen, moves, ply, mate_candidate):
    """(how, value) if the game has ended after `ply` moves, else None."""
    played = moves[:ply]
    ended, value = sf.is_optional_game_end(VARIANT, fen, played)
    if (ended or mate_candidate) and not sf.legal_moves(VARIANT, fen, played):
        return "nomoves", sf.game_result(VARIANT, fen, played)
    return ("optional", value) if ended else None


def answer(sf, case):
    fen, moves = case["fen"], case["moves"]
    if sf.validate_fen(fen, VARIANT) != sf.FEN_OK:
        return f"error\tpyffish refuses the FEN {fen}"
    immediate, _ = sf.is_immediate_game_end(VARIANT, fen, moves)
    if immediate:
        return "error\tis_immediate_game_end ends the game after the last move"
    mates = set(case.get("mates", []))
    first = "none"
    for ply in case["plies"]:
        end = ended_at(sf, fen, moves, ply, ply in mates)
        if end is not None:
            first = f"{ply}:{end[0]}:{end[1]}"
            break
    also = "none"
    if case.get("also") is not None:
        end = ended_at(sf, fen, moves, case["also"], case["also"] in mates)
        if end is not None:
            also = f"{case['also']}:{end[0]}:{end[1]}"
    return f"{first}\t{also}"


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import pyffish as sf
    except ImportError as e:
        print(f"cannot import pyffish ({e}); run scripts/python-env or scripts/test", file=sys.stderr)
        return 3

    out = ["pyffish " + ".".join(str(v) for v in sf.version())]
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                out.append(answer(sf, json.loads(line)))
            except Exception as e:  # noqa: BLE001 - report any failure on this line and go on
                msg = str(e).replace("\t", " ").replace("\n", " ")
                out.append(f"error\t{type(e).__name__}: {msg}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
