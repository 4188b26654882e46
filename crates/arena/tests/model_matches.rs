//! The shape of the project's matches between models, which sizes and simulates the gate
//! (`xqz_arena::stats::MODEL_MATCHES`), is what the committed A/B records hold.

use std::collections::BTreeMap;
use std::path::Path;

use xqz_arena::records::read_games;
use xqz_arena::stats::MODEL_MATCHES;

#[test]
fn the_model_match_shape_is_every_model_pair_of_the_committed_ab_records() {
    let evidence = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/learning-evidence");
    let mut counts = [0; 5];
    for ab in ["ab-cont", "ab-ema", "ab-levers", "ab-moves-left", "ab-surprise"] {
        let rows = read_games(&evidence.join(ab)).unwrap();
        let mut pairs: BTreeMap<(&str, u32), Vec<f64>> = BTreeMap::new();
        // Checkpoints against checkpoints; their matches against material@32 are left out.
        for row in rows.iter().filter(|r| r.a_steps.is_some() && r.b_steps.is_some()) {
            pairs.entry((row.match_id.as_str(), row.pair)).or_default().push(row.a_score);
        }
        for scores in pairs.values() {
            assert_eq!(scores.len(), 2, "a pair has two games");
            let bin = (2.0 * (scores[0] + scores[1])) as usize;
            // Counted from both sides, so that the shape sits at 0 Elo.
            counts[bin] += 1;
            counts[4 - bin] += 1;
        }
    }
    assert_eq!(counts, MODEL_MATCHES.counts);
}
