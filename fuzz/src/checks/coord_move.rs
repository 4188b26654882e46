//! Coordinate moves (`h2e2`, ICCS `H2-E2`): parsing never panics, and what parses prints as the
//! canonical lower-case form, which parses back to the same move. Also the 14-bit move code.

use xiangqi::Move;

/// The target's check of one input: panics where a property fails.
pub fn check(data: &[u8]) {
    // The 14-bit code, from the first two bytes.
    if let [a, b, ..] = *data {
        let code = u16::from_le_bytes([a, b]);
        match Move::from_u16(code) {
            Some(mv) => {
                assert_eq!(mv.to_u16(), code);
                assert_eq!(mv.to_string().parse::<Move>(), Ok(mv));
            }
            None => assert!(code >> 14 != 0 || code & 0x7f >= 90 || (code >> 7) & 0x7f >= 90),
        }
    }

    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(mv) = text.parse::<Move>() else { return };
    let printed = mv.to_string();
    assert_eq!(printed.len(), 4);
    assert_eq!(printed.parse::<Move>(), Ok(mv));
    // The accepted forms are four characters, or five with a dash in the middle.
    let squeezed: String = text.chars().enumerate().filter(|&(i, c)| !(i == 2 && c == '-')).map(|(_, c)| c).collect();
    assert_eq!(squeezed.to_ascii_lowercase(), printed, "{text:?} parsed as {printed}");
    assert_eq!(Move::from_u16(mv.to_u16()), Some(mv));
    assert_eq!(mv.mirror().mirror(), mv);
    assert_eq!(Move::new(mv.from(), mv.to()), mv);
}
