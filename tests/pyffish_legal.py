#!/usr/bin/env python3
"""Reference answers from pyffish (Fairy-Stockfish) for crates/xiangqi/tests/differential.rs.

Usage: pyffish_legal.py INPUT

INPUT holds one request per line, tab-separated, moves in pyffish's coordinates (ranks 1-10):

    P <FEN> [anything]          the legal moves of a position (the Rust side writes its own move
                                list after the FEN, for people reading the file; it is ignored)
    G <start FEN> <moves>       a whole game, moves space-separated

One answer line per request line, in the same order, tab-separated:

    ok <legal moves, space-separated>               for P
    game <check flags> <FEN after the last move>    for G: one 0/1 per move, whether it gives check
    refused <validate_fen code>                     pyffish does not accept the FEN
    error <message>

preceded by one header line "pyffish <version> jobs <n>".

Every pyffish call re-initialises the variant's piece tables (milliseconds), so the requests are
spread over worker processes: $XQZ_PYFFISH_JOBS of them, default one per available CPU.
"""

import multiprocessing
import os
import sys

VARIANT = "xiangqi"

sf = None


def answer(line: str) -> str:
    fields = line.rstrip("\n").split("\t")
    kind = fields[0]
    try:
        fen = fields[1]
        code = sf.validate_fen(fen, VARIANT)
        if code != sf.FEN_OK:
            return f"refused\t{code}"
        if kind == "P":
            return "ok\t" + " ".join(sf.legal_moves(VARIANT, fen, []))
        if kind == "G":
            moves = fields[2].split() if len(fields) > 2 else []
            # SAN marks moves that give check with '+' (or '#' for mate).
            sans = sf.get_san_moves(VARIANT, fen, moves, False, sf.NOTATION_SAN)
            flags = " ".join("1" if san.endswith(("+", "#")) else "0" for san in sans)
            return f"game\t{flags}\t{sf.get_fen(VARIANT, fen, moves)}"
        return f"error\tunknown request kind {kind!r}"
    except Exception as e:  # noqa: BLE001 - report any failure on this line and go on
        msg = str(e).replace("\t", " ").replace("\n", " ")
        return f"error\t{type(e).__name__}: {msg}"


def main() -> int:
    global sf
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import pyffish
    except ImportError as e:
        print(f"cannot import pyffish ({e}); run scripts/python-env or scripts/test", file=sys.stderr)
        return 3
    sf = pyffish

    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.readlines()
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    jobs = max(1, int(os.environ.get("XQZ_PYFFISH_JOBS") or cpus))
    jobs = min(jobs, max(1, len(lines) // 64))
    if jobs == 1:
        answers = [answer(line) for line in lines]
    else:
        # fork: the workers inherit the imported, initialised module.
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            answers = pool.map(answer, lines, chunksize=max(1, min(512, len(lines) // (jobs * 8))))
    version = ".".join(str(v) for v in sf.version())
    sys.stdout.write(f"pyffish {version} jobs {jobs}\n")
    sys.stdout.write("\n".join(answers) + ("\n" if answers else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
