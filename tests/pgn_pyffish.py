#!/usr/bin/env python3
"""Reads a PGN file of xiangqi games in ICCS notation as a PGN reader would, and checks with
pyffish (Fairy-Stockfish) that every move is legal in sequence from the game's FEN tag (or the
start position); for crates/cli/tests/data.rs (`xqz data export --format pgn --notation iccs`).

Usage: pgn_pyffish.py FILE.pgn

The file is read by the PGN grammar, not by what our writer happens to print: tag pairs
`[Name "value"]` (with `\\"` and `\\\\` escapes), a blank line, then movetext tokens: move numbers
(`12.` before a red move, `12...` or `12. ...` before a black one, matching the position's move
counter), ICCS moves (`H2-E2`: file A-I, rank 0-9 from red's side), `{comments}`, and the game
termination marker, which must be the last token and equal the Result tag. The tags must say
`[Game "Chinese Chess"]` and `[Format "ICCS"]`, and PlyCount, when present, the number of moves.

ICCS ranks are 0-9 and pyffish's are 1-10: `H2-E2` is pyffish's `h3e3`.

Prints `ok GAMES games MOVES moves` and exits 0, or prints every problem (one per line, naming the
game and the ply) and exits 1.
"""

import re
import sys

import pyffish as sf

VARIANT = "xiangqi"
TAG = re.compile(r'^\[([A-Za-z0-9_]+)\s+"((?:[^"\\]|\\.)*)"\]$')
TOKEN = re.compile(
    r"\s*(?:(?P<comment>\{[^}]*\})|(?P<number>\d+)(?P<dots>\.(?:\.\.)?)"
    r"|(?P<ellipsis>\.\.\.)|(?P<result>1-0|0-1|1/2-1/2|\*)|(?P<move>[A-I][0-9]-[A-I][0-9]))"
)
RESULTS = {"1-0", "0-1", "1/2-1/2", "*"}


def games(text):
    """(tags, movetext) of each game: a block of tag lines, a blank line, then movetext lines."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        tags = {}
        while i < len(lines) and lines[i].startswith("["):
            m = TAG.match(lines[i].strip())
            if not m:
                raise ValueError(f"line {i + 1}: not a tag pair: {lines[i]!r}")
            tags[m.group(1)] = re.sub(r"\\(.)", r"\1", m.group(2))
            i += 1
        if i < len(lines) and lines[i].strip():
            raise ValueError(f"line {i + 1}: no blank line between the tags and the moves")
        movetext = []
        i += 1
        while i < len(lines) and not lines[i].startswith("["):
            movetext.append(lines[i])
            i += 1
        yield tags, " ".join(movetext)


def tokens(movetext):
    at = 0
    while movetext[at:].strip():
        m = TOKEN.match(movetext, at)
        if not m:
            raise ValueError(f"unreadable movetext at {movetext[at:at + 30].strip()!r}")
        at = m.end()
        kind = m.lastgroup if m.lastgroup != "dots" else "number"
        yield kind, m


def to_pyffish(iccs):
    """`H2-E2` (ranks 0-9) as pyffish's `h3e3` (ranks 1-10)."""
    return f"{iccs[0].lower()}{int(iccs[1]) + 1}{iccs[3].lower()}{int(iccs[4]) + 1}"


def check(index, tags, movetext):
    """The problems of one game, and its number of moves."""
    name = f"game {index + 1} ({tags.get('GameId', 'no GameId')})"
    problems = []
    if tags.get("Game") != "Chinese Chess" or tags.get("Format") != "ICCS":
        problems.append(f"{name}: Game/Format tags are {tags.get('Game')!r}/{tags.get('Format')!r}")
    fen = tags.get("FEN", sf.start_fen(VARIANT))
    if sf.validate_fen(fen, VARIANT) != sf.FEN_OK:
        return [f"{name}: pyffish refuses the FEN {fen!r}"], 0
    # The move counter and side to move of the FEN: the move numbers must follow them.
    fields = fen.split()
    black = len(fields) > 1 and fields[1] == "b"
    fullmove = int(fields[5]) if len(fields) > 5 else 1
    played, result, numbered = [], None, False
    for kind, m in tokens(movetext):
        if result is not None and kind != "comment":
            problems.append(f"{name}: {m.group(0).strip()!r} after the termination marker")
            break
        if result is not None:
            problems.append(f"{name}: a comment after the termination marker")
            break
        if kind == "number":
            number, dots = int(m.group("number")), m.group("dots")
            if number != fullmove or (dots == "..." and not black):
                problems.append(f"{name}: move number {m.group(0).strip()} before ply {len(played) + 1}")
            numbered = True
        elif kind == "ellipsis":
            if not black:
                problems.append(f"{name}: '...' before red's move at ply {len(played) + 1}")
        elif kind == "move":
            if not black and not numbered:
                problems.append(f"{name}: red's move at ply {len(played) + 1} has no move number")
            mv = to_pyffish(m.group("move"))
            legal = sf.legal_moves(VARIANT, fen, played)
            if mv not in legal:
                problems.append(
                    f"{name}: ply {len(played) + 1} {m.group('move')} ({mv}) is not legal after {played}"
                )
                return problems, len(played)
            played.append(mv)
            if black:
                fullmove += 1
            black, numbered = not black, False
        elif kind == "result":
            result = m.group("result")
    if result is None:
        problems.append(f"{name}: no termination marker")
    elif result != tags.get("Result"):
        problems.append(f"{name}: termination marker {result} but Result tag {tags.get('Result')!r}")
    if "PlyCount" in tags and tags["PlyCount"] != str(len(played)):
        problems.append(f"{name}: PlyCount {tags['PlyCount']} but {len(played)} moves")
    return problems, len(played)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    problems, count, moves = [], 0, 0
    try:
        for index, (tags, movetext) in enumerate(games(text)):
            found, n = check(index, tags, movetext)
            problems += found
            count, moves = count + 1, moves + n
    except ValueError as e:
        problems.append(str(e))
    if problems or count == 0:
        print("\n".join(problems or ["no games in the file"]))
        sys.exit(1)
    print(f"ok {count} games {moves} moves")


if __name__ == "__main__":
    main()
