//! Attack tables, computed at compile time.
//!
//! Sliders (rook, cannon) look up one rank and one file separately. Rank occupancy is a 9-bit
//! slice of the rank-major board; file occupancy is a 10-bit slice of a second, file-major
//! (transposed) occupancy board that the position keeps in step, so neither needs a scan.

/// Square index of (file, rank).
const fn sq(file: i32, rank: i32) -> usize {
    (rank * 9 + file) as usize
}

const fn on_board(file: i32, rank: i32) -> bool {
    file >= 0 && file < 9 && rank >= 0 && rank < 10
}

const fn bit(file: i32, rank: i32) -> u128 {
    if on_board(file, rank) { 1u128 << sq(file, rank) } else { 0 }
}

/// Bit index in the file-major board: `file * 10 + rank`.
pub(crate) const TRANSPOSED: [u8; 90] = {
    let mut t = [0u8; 90];
    let mut s = 0;
    while s < 90 {
        t[s] = ((s % 9) * 10 + s / 9) as u8;
        s += 1;
    }
    t
};

/// Slider attacks along a line of `len` points from `pos`, given the line's occupancy bits.
/// Returns (rook-like attacks including the first blocker, cannon captures).
const fn line_attacks(len: i32, pos: i32, occ: u32) -> (u16, u16) {
    let mut rook = 0u16;
    let mut cannon = 0u16;
    let mut dir = -1;
    while dir <= 1 {
        let mut p = pos + dir;
        let mut screened = false;
        while p >= 0 && p < len {
            let occupied = occ >> p & 1 != 0;
            if !screened {
                rook |= 1 << p;
                if occupied {
                    screened = true;
                }
            } else if occupied {
                cannon |= 1 << p;
                break;
            }
            p += dir;
        }
        dir += 2;
    }
    (rook, cannon)
}

/// `[file][rank occupancy]` -> (rook attacks, cannon captures) as 9-bit masks along the rank.
static RANK_SLIDE: [[(u16, u16); 512]; 9] = {
    let mut t = [[(0u16, 0u16); 512]; 9];
    let mut f = 0;
    while f < 9 {
        let mut occ = 0;
        while occ < 512 {
            t[f][occ] = line_attacks(9, f as i32, occ as u32);
            occ += 1;
        }
        f += 1;
    }
    t
};

/// `[rank][file occupancy]` -> (rook attacks, cannon captures) as 10-bit masks along the file.
static FILE_SLIDE: [[(u16, u16); 1024]; 10] = {
    let mut t = [[(0u16, 0u16); 1024]; 10];
    let mut r = 0;
    while r < 10 {
        let mut occ = 0;
        while occ < 1024 {
            t[r][occ] = line_attacks(10, r as i32, occ as u32);
            occ += 1;
        }
        r += 1;
    }
    t
};

/// A 10-bit rank mask spread onto file `a` of the board.
static FILE_SPREAD: [u128; 1024] = {
    let mut t = [0u128; 1024];
    let mut m = 0;
    while m < 1024 {
        let mut r = 0;
        while r < 10 {
            if m >> r & 1 != 0 {
                t[m] |= 1u128 << (r * 9);
            }
            r += 1;
        }
        m += 1;
    }
    t
};

/// Rook attacks and cannon captures from `s`, given both occupancy boards.
#[inline(always)]
pub(crate) fn slides(s: usize, occ: u128, occ_t: u128) -> (u128, u128) {
    let file = s % 9;
    let rank = s / 9;
    let row = (occ >> (rank * 9)) as usize & 0x1ff;
    let col = (occ_t >> (file * 10)) as usize & 0x3ff;
    let (rr, rc) = RANK_SLIDE[file][row];
    let (fr, fc) = FILE_SLIDE[rank][col];
    (
        (rr as u128) << (rank * 9) | FILE_SPREAD[fr as usize] << file,
        (rc as u128) << (rank * 9) | FILE_SPREAD[fc as usize] << file,
    )
}

/// Rook attacks from `s` (including the first blocker in each direction).
#[inline(always)]
pub(crate) fn rook(s: usize, occ: u128, occ_t: u128) -> u128 {
    let file = s % 9;
    let rank = s / 9;
    let row = (occ >> (rank * 9)) as usize & 0x1ff;
    let col = (occ_t >> (file * 10)) as usize & 0x3ff;
    (RANK_SLIDE[file][row].0 as u128) << (rank * 9) | FILE_SPREAD[FILE_SLIDE[rank][col].0 as usize] << file
}

/// For each square, the four (leg, targets) pairs of a horse standing there.
pub(crate) static HORSE_MOVES: [[(u128, u128); 4]; 90] = {
    let mut t = [[(0u128, 0u128); 4]; 90];
    let mut s = 0;
    while s < 90 {
        let f = (s % 9) as i32;
        let r = (s / 9) as i32;
        let dirs = [(0, 1), (1, 0), (0, -1), (-1, 0)];
        let mut d = 0;
        while d < 4 {
            let (df, dr) = dirs[d];
            let leg = bit(f + df, r + dr);
            let targets = if leg == 0 {
                0
            } else if df == 0 {
                bit(f - 1, r + 2 * dr) | bit(f + 1, r + 2 * dr)
            } else {
                bit(f + 2 * df, r - 1) | bit(f + 2 * df, r + 1)
            };
            t[s][d] = (leg, targets);
            d += 1;
        }
        s += 1;
    }
    t
};

/// For each square, the four (leg, horse squares) pairs of horses that would attack it:
/// a horse attacks through the diagonal neighbour of its target, which is its leg.
pub(crate) static HORSE_ATTACKERS: [[(u128, u128); 4]; 90] = {
    let mut t = [[(0u128, 0u128); 4]; 90];
    let mut s = 0;
    while s < 90 {
        let f = (s % 9) as i32;
        let r = (s / 9) as i32;
        let dirs = [(1, 1), (1, -1), (-1, -1), (-1, 1)];
        let mut d = 0;
        while d < 4 {
            let (df, dr) = dirs[d];
            let leg = bit(f + df, r + dr);
            let sources = if leg == 0 { 0 } else { bit(f + df, r + 2 * dr) | bit(f + 2 * df, r + dr) };
            t[s][d] = (leg, sources);
            d += 1;
        }
        s += 1;
    }
    t
};

/// Horse moves from `s` given the occupancy.
#[inline(always)]
pub(crate) fn horse(s: usize, occ: u128) -> u128 {
    gated(&HORSE_MOVES[s], occ)
}

/// Squares from which a horse would attack `s` given the occupancy.
#[inline(always)]
pub(crate) fn horse_attackers(s: usize, occ: u128) -> u128 {
    gated(&HORSE_ATTACKERS[s], occ)
}

/// The union of the target sets whose gate point (horse leg, elephant eye) is empty.
#[inline(always)]
fn gated(pairs: &[(u128, u128); 4], occ: u128) -> u128 {
    let mut acc = 0;
    for &(gate, targets) in pairs {
        if occ & gate == 0 {
            acc |= targets;
        }
    }
    acc
}

const fn in_palace(f: i32, r: i32) -> bool {
    f >= 3 && f <= 5 && (r <= 2 || r >= 7) && r >= 0 && r <= 9
}

/// One-step moves in `dirs` from each palace square that stay in the same palace.
const fn palace_steps(dirs: [(i32, i32); 4]) -> [u128; 90] {
    let mut t = [0u128; 90];
    let mut s = 0;
    while s < 90 {
        let f = (s % 9) as i32;
        let r = (s / 9) as i32;
        if in_palace(f, r) {
            let mut d = 0;
            while d < 4 {
                let (nf, nr) = (f + dirs[d].0, r + dirs[d].1);
                if in_palace(nf, nr) && (nr <= 2) == (r <= 2) {
                    t[s] |= bit(nf, nr);
                }
                d += 1;
            }
        }
        s += 1;
    }
    t
}

/// King steps from each palace square (empty elsewhere).
pub(crate) static KING_MOVES: [u128; 90] = palace_steps([(0, 1), (1, 0), (0, -1), (-1, 0)]);

/// Advisor steps from each palace square (empty elsewhere).
pub(crate) static ADVISOR_MOVES: [u128; 90] = palace_steps([(1, 1), (1, -1), (-1, -1), (-1, 1)]);

/// For each square, the four (eye, target) pairs of an elephant there; targets never cross the
/// river. The same table answers "which elephants attack this square", as the moves are symmetric.
pub(crate) static ELEPHANT_MOVES: [[(u128, u128); 4]; 90] = {
    let mut t = [[(0u128, 0u128); 4]; 90];
    let mut s = 0;
    while s < 90 {
        let f = (s % 9) as i32;
        let r = (s / 9) as i32;
        let dirs = [(1, 1), (1, -1), (-1, -1), (-1, 1)];
        let mut d = 0;
        while d < 4 {
            let (tf, tr) = (f + 2 * dirs[d].0, r + 2 * dirs[d].1);
            if on_board(tf, tr) && (tr <= 4) == (r <= 4) {
                t[s][d] = (bit(f + dirs[d].0, r + dirs[d].1), bit(tf, tr));
            }
            d += 1;
        }
        s += 1;
    }
    t
};

/// Elephant moves from `s` given the occupancy.
#[inline(always)]
pub(crate) fn elephant(s: usize, occ: u128) -> u128 {
    gated(&ELEPHANT_MOVES[s], occ)
}

/// `[color][square]`: pawn moves (forward; sideways once across the river).
pub(crate) static PAWN_MOVES: [[u128; 90]; 2] = {
    let mut t = [[0u128; 90]; 2];
    let mut c = 0;
    while c < 2 {
        let fwd = if c == 0 { 1 } else { -1 };
        let mut s = 0;
        while s < 90 {
            let f = (s % 9) as i32;
            let r = (s / 9) as i32;
            let crossed = if c == 0 { r >= 5 } else { r <= 4 };
            let mut m = bit(f, r + fwd);
            if crossed {
                m |= bit(f - 1, r) | bit(f + 1, r);
            }
            t[c][s] = m;
            s += 1;
        }
        c += 1;
    }
    t
};

/// `[color][square]`: squares from which a pawn of `color` attacks the square.
pub(crate) static PAWN_ATTACKERS: [[u128; 90]; 2] = {
    let mut t = [[0u128; 90]; 2];
    let mut c = 0;
    while c < 2 {
        let mut from = 0;
        while from < 90 {
            let mut m = PAWN_MOVES[c][from];
            while m != 0 {
                let to = m.trailing_zeros() as usize;
                t[c][to] |= 1u128 << from;
                m &= m - 1;
            }
            from += 1;
        }
        c += 1;
    }
    t
};

/// Points strictly between two squares on one rank or file (empty if not aligned).
pub(crate) static BETWEEN: [[u128; 90]; 90] = {
    let mut t = [[0u128; 90]; 90];
    let mut a = 0;
    while a < 90 {
        let mut b = 0;
        while b < 90 {
            let (fa, ra, fb, rb) = ((a % 9) as i32, (a / 9) as i32, (b % 9) as i32, (b / 9) as i32);
            if a != b && (fa == fb || ra == rb) {
                let df = if fb > fa {
                    1
                } else if fb < fa {
                    -1
                } else {
                    0
                };
                let dr = if rb > ra {
                    1
                } else if rb < ra {
                    -1
                } else {
                    0
                };
                let (mut f, mut r) = (fa + df, ra + dr);
                let mut m = 0u128;
                while f != fb || r != rb {
                    m |= bit(f, r);
                    f += df;
                    r += dr;
                }
                t[a][b] = m;
            }
            b += 1;
        }
        a += 1;
    }
    t
};

/// The rank and file through each square, without the square itself.
pub(crate) static LINES: [u128; 90] = {
    let mut t = [0u128; 90];
    let mut s = 0;
    while s < 90 {
        let f = (s % 9) as i32;
        let r = (s / 9) as i32;
        let mut i = 0;
        while i < 10 {
            t[s] |= bit(f, i);
            t[s] |= bit(i, r);
            i += 1;
        }
        t[s] &= !(1u128 << s);
        s += 1;
    }
    t
};
