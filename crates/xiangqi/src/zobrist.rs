//! Zobrist keys, generated at compile time from a fixed seed so hashes are stable across builds.

const fn splitmix64(state: u64) -> (u64, u64) {
    let state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (state, z ^ (z >> 31))
}

/// `[piece index][square]` keys.
pub(crate) static PIECE_SQUARE: [[u64; 90]; 14] = {
    let mut t = [[0u64; 90]; 14];
    let mut state = 0x5851_f42d_4c95_7f2d;
    let mut p = 0;
    while p < 14 {
        let mut s = 0;
        while s < 90 {
            let (next, key) = splitmix64(state);
            state = next;
            t[p][s] = key;
            s += 1;
        }
        p += 1;
    }
    t
};

/// Xored in when Black is to move.
pub(crate) const BLACK_TO_MOVE: u64 = splitmix64(0x2545_f491_4f6c_dd1d).1;
