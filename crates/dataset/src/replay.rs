//! The replay window: the newest samples of a dataset, shuffled per epoch, mirrored at random,
//! assembled into ready-to-train [`Batch`]es — synchronously ([`ReplayWindow`]) or by a
//! background thread behind a bounded channel ([`ReplayLoader`]).
//!
//! Everything random comes from one seed: epoch `e` draws its permutation and its mirror flags
//! from ChaCha8 seeded with the seed, stream `e`, so the same seed and the same dataset contents
//! give the same batches.
//!
//! ```
//! # use xqz_dataset::*;
//! # use xiangqi::game::{Game, GameConfig};
//! # let dir = tempfile::tempdir()?;
//! # let (mut writer, _) = DatasetWriter::open(dir.path(), WriterConfig::default())?;
//! # let mut game = Game::new(GameConfig { max_plies: Some(4), ..Default::default() });
//! # for mv in ["h2e2", "h9g7", "h0g2", "i9h9"] { game.push_str(mv)?; }
//! # let record = GameRecord::from_game(&game, GameId::from_u128(1))?;
//! # let searches: Vec<_> = record.moves.iter().map(|&mv| PlySearch::full(vec![PolicyEntry { mv, p: 1.0 }], [0.2, 0.6, 0.2], 1)).collect();
//! # let samples = SampleRecord::from_game(&record, &searches)?;
//! # writer.append(record, samples)?;
//! # writer.finish()?;
//! let config = ReplayConfig { batch_size: 2, epochs: Some(1), ..ReplayConfig::default() };
//! let loader = ReplayLoader::spawn(dir.path(), config)?;
//! let batches = loader.collect::<Result<Vec<Batch>, _>>()?;
//! assert_eq!(batches.len(), 2); // 4 samples in the window, batches of 2
//! assert_eq!(batches[0].boards.len(), 2 * 90);
//! assert_eq!(batches[0].wdl_target.len(), 2 * 3);
//! assert_eq!((batches[0].quiet_plies.len(), batches[0].repetitions.len()), (2, 2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use arrow_array::types::{UInt8Type, UInt16Type, UInt32Type};
use arrow_array::{BooleanArray, Int8Array};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::Color;

use crate::dataset::{Dataset, RecoveryReport};
use crate::error::{DatasetError, Result};
use crate::manifest::{ShardEntry, ShardKind};
use crate::record::{Columns, MIRROR, mirror_move_code};
use crate::schema::{BOARD_BYTES, GAME_ID_BYTES, samples};
use crate::storage::DatasetLocation;

/// Number of distinct move codes (`from | to << 7` fits in 14 bits): the width of
/// [`Batch::policy_dense`].
pub const MOVE_CODES: usize = 1 << 14;

/// KataGo's growing window: all samples up to `c`, then
/// `c * (1 + beta * ((n / c)^alpha - 1) / alpha)` of the newest `n`, capped at `max`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GrowingWindow {
    /// Samples kept in full before the window starts lagging behind the data (KataGo: 250 000).
    pub c: f64,
    /// Growth exponent (KataGo: 0.75).
    pub alpha: f64,
    /// Growth scale (KataGo: 0.4).
    pub beta: f64,
    /// Upper bound, if any.
    pub max: Option<usize>,
}

impl Default for GrowingWindow {
    fn default() -> GrowingWindow {
        GrowingWindow { c: 250_000.0, alpha: 0.75, beta: 0.4, max: None }
    }
}

/// How many of the newest samples an epoch draws from.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum WindowSize {
    /// At most this many.
    Fixed(usize),
    /// Growing with the data.
    Growing(GrowingWindow),
}

impl WindowSize {
    /// The window for a dataset of `total` samples (never more than `total`).
    ///
    /// ```
    /// use xqz_dataset::{GrowingWindow, WindowSize};
    /// let w = WindowSize::Growing(GrowingWindow { c: 1000.0, ..Default::default() });
    /// assert_eq!(w.size(500), 500);
    /// assert_eq!(w.size(1000), 1000);
    /// assert!(w.size(10_000) > 1000 && w.size(10_000) < 10_000);
    /// assert_eq!(WindowSize::Fixed(100).size(50), 50);
    /// ```
    pub fn size(&self, total: u64) -> usize {
        let total_usize = usize::try_from(total).unwrap_or(usize::MAX);
        match *self {
            WindowSize::Fixed(n) => n.min(total_usize),
            WindowSize::Growing(g) => {
                let n = total as f64;
                let w = if n <= g.c || g.c <= 0.0 {
                    n
                } else if g.alpha == 0.0 {
                    g.c * (1.0 + g.beta * (n / g.c).ln())
                } else {
                    g.c * (1.0 + g.beta * ((n / g.c).powf(g.alpha) - 1.0) / g.alpha)
                };
                let w = (w.max(0.0) as usize).min(total_usize);
                g.max.map_or(w, |m| w.min(m))
            }
        }
    }
}

/// How the replay window samples and batches.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayConfig {
    /// The window.
    pub window: WindowSize,
    /// Samples per batch.
    pub batch_size: usize,
    /// The seed of all randomness (permutations and mirroring).
    pub seed: u64,
    /// Probability that a sample is mirrored left-right (board and policy together).
    pub mirror_probability: f64,
    /// Drop an epoch's last, incomplete batch (so every batch has `batch_size` rows).
    pub drop_last: bool,
    /// Batches the background loader prepares ahead (the channel's bound).
    pub prefetch: usize,
    /// Stop after this many epochs; `None` runs until the loader is dropped.
    pub epochs: Option<u64>,
    /// Re-read the manifest before each epoch, so new shards join the window.
    pub refresh_each_epoch: bool,
    /// The loader waits until the window holds at least this many samples (and one full batch if
    /// `drop_last`), re-reading the manifest every `poll_interval`.
    pub min_samples: usize,
    /// See `min_samples`.
    pub poll_interval: Duration,
}

impl Default for ReplayConfig {
    fn default() -> ReplayConfig {
        ReplayConfig {
            window: WindowSize::Growing(GrowingWindow::default()),
            batch_size: 256,
            seed: 0,
            mirror_probability: 0.5,
            drop_last: true,
            prefetch: 4,
            epochs: None,
            refresh_each_epoch: true,
            min_samples: 0,
            poll_interval: Duration::from_secs(5),
        }
    }
}

impl ReplayConfig {
    fn check(&self) -> Result<()> {
        let bad = |m: &str| Err(DatasetError::Config(m.to_string()));
        if self.batch_size == 0 {
            return bad("batch_size must be positive");
        }
        if !(0.0..=1.0).contains(&self.mirror_probability) {
            return bad("mirror_probability must lie in [0, 1]");
        }
        if self.prefetch == 0 {
            return bad("prefetch must be positive");
        }
        if let WindowSize::Fixed(n) = self.window
            && self.drop_last
            && n < self.batch_size
        {
            return bad("a fixed window smaller than batch_size with drop_last never yields a batch");
        }
        Ok(())
    }
}

/// One shard's samples in flat columns, as the window keeps them in memory.
#[derive(Clone, Debug, Default)]
pub struct SampleColumns {
    len: usize,
    boards: Vec<u8>,
    side: Vec<u8>,
    policy_offsets: Vec<u32>,
    policy_moves: Vec<u16>,
    policy_probs: Vec<f32>,
    root_wdl: Vec<f32>,
    result: Vec<i8>,
    plies_to_end: Vec<u32>,
    full_search: Vec<bool>,
    quiet_plies: Vec<u16>,
    repetitions: Vec<u8>,
    /// Whether the next row is the same game's next ply (whose search answered this row's move).
    next_in_game: Vec<bool>,
}

impl SampleColumns {
    /// Reads a shard's samples file into columns.
    pub fn read(dataset: &Dataset, shard: &ShardEntry) -> Result<SampleColumns> {
        let data = dataset.samples_batches(shard)?;
        let path = dataset.shard_path(shard, ShardKind::Samples);
        let rows = data.num_rows();
        let mut out = SampleColumns {
            boards: Vec::with_capacity(rows * BOARD_BYTES),
            policy_offsets: vec![0],
            ..SampleColumns::default()
        };
        let (mut game_ids, mut plies) = (Vec::with_capacity(rows * GAME_ID_BYTES), Vec::with_capacity(rows));
        for batch in &data.batches {
            let cols = Columns::new(batch, &path);
            out.boards.extend_from_slice(cols.fixed_binary(samples::BOARD, BOARD_BYTES)?);
            out.side.extend_from_slice(cols.primitive::<UInt8Type>(samples::SIDE_TO_MOVE)?);
            let (offsets, moves, probs) = cols.policy()?;
            let (first, last) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
            let base = out.policy_moves.len() as i64 - first as i64;
            out.policy_offsets.extend(offsets[1..].iter().map(|&o| (i64::from(o) + base) as u32));
            out.policy_moves.extend_from_slice(&moves[first..last]);
            out.policy_probs.extend_from_slice(&probs[first..last]);
            out.root_wdl.extend_from_slice(cols.wdl()?);
            out.result.extend_from_slice(cols.get::<Int8Array>(samples::RESULT)?.values());
            out.plies_to_end.extend_from_slice(cols.primitive::<UInt32Type>(samples::PLIES_TO_END)?);
            out.full_search.extend(cols.get::<BooleanArray>(samples::FULL_SEARCH)?.values().iter());
            out.quiet_plies.extend_from_slice(cols.primitive::<UInt16Type>(samples::QUIET_PLIES)?);
            out.repetitions.extend_from_slice(cols.primitive::<UInt8Type>(samples::REPETITIONS)?);
            game_ids.extend_from_slice(cols.fixed_binary(samples::GAME_ID, GAME_ID_BYTES)?);
            plies.extend_from_slice(cols.primitive::<UInt32Type>(samples::PLY)?);
            out.len += batch.num_rows();
        }
        let game = |row: usize| &game_ids[row * GAME_ID_BYTES..(row + 1) * GAME_ID_BYTES];
        out.next_in_game =
            (0..out.len).map(|r| r + 1 < out.len && game(r) == game(r + 1) && plies[r + 1] == plies[r] + 1).collect();
        if out.side.iter().any(|&s| s > 1) || out.result.iter().any(|r| !(-1..=1).contains(r)) {
            return Err(DatasetError::Shard { path, message: "side_to_move or result out of range".into() });
        }
        Ok(out)
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A ready-to-train batch in flat arrays, row-major, `size` rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// The epoch it belongs to (0-based).
    pub epoch: u64,
    /// Its number within the epoch (0-based).
    pub index: u64,
    /// Rows.
    pub size: usize,
    /// Boards, `[size * 90]`, encoded as in the schema (after mirroring).
    pub boards: Vec<u8>,
    /// Side to move, `[size]`: 0 Red, 1 Black.
    pub side_to_move: Vec<u8>,
    /// Sparse policy targets in CSR form: row `i` owns entries
    /// `policy_offsets[i]..policy_offsets[i + 1]` (`[size + 1]`).
    pub policy_offsets: Vec<u32>,
    /// Move codes of the policy entries (after mirroring).
    pub policy_moves: Vec<u16>,
    /// Probabilities of the policy entries.
    pub policy_probs: Vec<f32>,
    /// The opponent's reply, in the same CSR form: row `i` owns entries
    /// `reply_offsets[i]..reply_offsets[i + 1]` (`[size + 1]`), the recorded policy of the same
    /// game's next position where its search was full (moves of the opponent, after mirroring),
    /// none otherwise (a cheap search, the game's last sample).
    pub reply_offsets: Vec<u32>,
    /// Move codes of the reply entries (after mirroring).
    pub reply_moves: Vec<u16>,
    /// Probabilities of the reply entries.
    pub reply_probs: Vec<f32>,
    /// Game result as a one-hot [win, draw, loss] for the side to move, `[size * 3]`.
    pub wdl_target: Vec<f32>,
    /// The search's root [win, draw, loss] estimate, `[size * 3]`.
    pub root_wdl: Vec<f32>,
    /// Plies to the end of the game, `[size]`.
    pub plies_to_end: Vec<f32>,
    /// 1 where the search was full (the policy target counts), else 0, `[size]`.
    pub full_search: Vec<u8>,
    /// Plies since the last capture (halfmove clock, saturated at `u16::MAX`), `[size]`.
    pub quiet_plies: Vec<u16>,
    /// Earlier occurrences of the position since the last capture (saturated at `u8::MAX`), `[size]`.
    pub repetitions: Vec<u8>,
    /// 1 where the row was mirrored, `[size]`.
    pub mirrored: Vec<u8>,
}

impl Batch {
    fn with_capacity(size: usize) -> Batch {
        Batch {
            epoch: 0,
            index: 0,
            size: 0,
            boards: Vec::with_capacity(size * BOARD_BYTES),
            side_to_move: Vec::with_capacity(size),
            policy_offsets: {
                let mut v = Vec::with_capacity(size + 1);
                v.push(0);
                v
            },
            policy_moves: Vec::with_capacity(size * 48),
            policy_probs: Vec::with_capacity(size * 48),
            reply_offsets: {
                let mut v = Vec::with_capacity(size + 1);
                v.push(0);
                v
            },
            reply_moves: Vec::with_capacity(size * 12),
            reply_probs: Vec::with_capacity(size * 12),
            wdl_target: Vec::with_capacity(size * 3),
            root_wdl: Vec::with_capacity(size * 3),
            plies_to_end: Vec::with_capacity(size),
            full_search: Vec::with_capacity(size),
            quiet_plies: Vec::with_capacity(size),
            repetitions: Vec::with_capacity(size),
            mirrored: Vec::with_capacity(size),
        }
    }

    /// Row `i`'s board.
    pub fn board(&self, i: usize) -> &[u8] {
        &self.boards[i * BOARD_BYTES..(i + 1) * BOARD_BYTES]
    }

    /// Row `i`'s policy entries as (move code, probability).
    pub fn policy(&self, i: usize) -> impl Iterator<Item = (u16, f32)> + '_ {
        let (a, b) = (self.policy_offsets[i] as usize, self.policy_offsets[i + 1] as usize);
        self.policy_moves[a..b].iter().copied().zip(self.policy_probs[a..b].iter().copied())
    }

    /// Row `i`'s opponent-reply entries as (move code, probability); none where it has no reply
    /// target.
    pub fn reply(&self, i: usize) -> impl Iterator<Item = (u16, f32)> + '_ {
        let (a, b) = (self.reply_offsets[i] as usize, self.reply_offsets[i + 1] as usize);
        self.reply_moves[a..b].iter().copied().zip(self.reply_probs[a..b].iter().copied())
    }

    /// Dense policy targets `[size * width]`, placing each entry of row `i` at
    /// `index(code, side to move of row i)`; entries whose index is `None` or out of range are
    /// dropped. The trainer passes the network's policy index, which depends on the side to move.
    pub fn policy_dense_with(&self, width: usize, index: impl Fn(u16, Color) -> Option<usize>) -> Vec<f32> {
        let mut out = vec![0.0; self.size * width];
        for i in 0..self.size {
            let side = if self.side_to_move[i] == 0 { Color::Red } else { Color::Black };
            let row = &mut out[i * width..(i + 1) * width];
            for (code, p) in self.policy(i) {
                if let Some(j) = index(code, side).filter(|&j| j < width) {
                    row[j] += p;
                }
            }
        }
        out
    }

    /// Dense policy targets over raw move codes, `[size * MOVE_CODES]`.
    pub fn policy_dense(&self) -> Vec<f32> {
        self.policy_dense_with(MOVE_CODES, |code, _| Some(usize::from(code)))
    }
}

#[derive(Clone, Debug)]
struct Segment {
    data: Arc<SampleColumns>,
    start: usize,
    len: usize,
}

/// The newest samples of a dataset, held in memory, and the batches of each epoch.
#[derive(Clone, Debug)]
pub struct ReplayWindow {
    location: DatasetLocation,
    config: ReplayConfig,
    cache: BTreeMap<u64, Arc<SampleColumns>>,
    segments: Vec<Segment>,
    /// `ends[i]` = rows in segments `0..=i`.
    ends: Vec<usize>,
    total_samples: u64,
    report: RecoveryReport,
}

impl ReplayWindow {
    /// Opens the dataset in `dir` and loads the window.
    pub fn open(dir: impl AsRef<Path>, config: ReplayConfig) -> Result<ReplayWindow> {
        ReplayWindow::open_at(DatasetLocation::from(dir.as_ref()), config)
    }

    /// Opens the dataset at `location` (a folder or an object store prefix) and loads the window.
    pub fn open_at(location: DatasetLocation, config: ReplayConfig) -> Result<ReplayWindow> {
        config.check()?;
        let mut window = ReplayWindow {
            location,
            config,
            cache: BTreeMap::new(),
            segments: Vec::new(),
            ends: Vec::new(),
            total_samples: 0,
            report: RecoveryReport::default(),
        };
        window.refresh()?;
        Ok(window)
    }

    /// Re-reads the manifest and moves the window to the newest samples, loading new shards and
    /// dropping those that fell out.
    pub fn refresh(&mut self) -> Result<()> {
        let dataset = Dataset::open_at(self.location.clone())?;
        self.total_samples = dataset.num_samples();
        let mut need = self.config.window.size(self.total_samples);
        let mut segments = Vec::new();
        let mut keep = BTreeMap::new();
        for shard in dataset.shards().iter().rev() {
            if need == 0 {
                break;
            }
            let rows = shard.samples as usize;
            if rows == 0 {
                continue;
            }
            let data = match self.cache.get(&shard.id) {
                Some(data) => Arc::clone(data),
                None => Arc::new(SampleColumns::read(&dataset, shard)?),
            };
            let take = rows.min(need);
            segments.push(Segment { data: Arc::clone(&data), start: rows - take, len: take });
            keep.insert(shard.id, data);
            need -= take;
        }
        segments.reverse();
        self.ends = segments
            .iter()
            .scan(0, |acc, s| {
                *acc += s.len;
                Some(*acc)
            })
            .collect();
        self.segments = segments;
        self.cache = keep;
        self.report = dataset.report().clone();
        Ok(())
    }

    /// Samples in the window.
    pub fn len(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Whether the window is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Samples in the whole dataset at the last refresh.
    pub fn total_samples(&self) -> u64 {
        self.total_samples
    }

    /// The ignored files found at the last refresh.
    pub fn report(&self) -> &RecoveryReport {
        &self.report
    }

    /// Batches of one epoch in the window's current state.
    pub fn epoch(&self, epoch: u64) -> EpochBatches<'_> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.config.seed);
        rng.set_stream(epoch);
        let n = self.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        // Fisher-Yates.
        for i in (1..n).rev() {
            let j = rng.random_range(0..=i);
            order.swap(i, j);
        }
        EpochBatches { window: self, epoch, order, next: 0, index: 0, rng }
    }

    fn locate(&self, i: usize) -> (&SampleColumns, usize) {
        let seg = self.ends.partition_point(|&end| end <= i);
        let before = if seg == 0 { 0 } else { self.ends[seg - 1] };
        let s = &self.segments[seg];
        (&s.data, s.start + i - before)
    }

    fn push_row(&self, batch: &mut Batch, i: usize, mirror: bool) {
        let (data, row) = self.locate(i);
        let board = &data.boards[row * BOARD_BYTES..(row + 1) * BOARD_BYTES];
        if mirror {
            let start = batch.boards.len();
            batch.boards.resize(start + BOARD_BYTES, 0);
            let out = &mut batch.boards[start..];
            for (src, &dst) in board.iter().zip(MIRROR.iter()) {
                out[dst as usize] = *src;
            }
        } else {
            batch.boards.extend_from_slice(board);
        }
        batch.side_to_move.push(data.side[row]);
        let entries = |row: usize| data.policy_offsets[row] as usize..data.policy_offsets[row + 1] as usize;
        let copy = |range: std::ops::Range<usize>, moves: &mut Vec<u16>, probs: &mut Vec<f32>| {
            if mirror {
                moves.extend(data.policy_moves[range.clone()].iter().map(|&c| mirror_move_code(c)));
            } else {
                moves.extend_from_slice(&data.policy_moves[range.clone()]);
            }
            probs.extend_from_slice(&data.policy_probs[range]);
        };
        copy(entries(row), &mut batch.policy_moves, &mut batch.policy_probs);
        batch.policy_offsets.push(batch.policy_moves.len() as u32);
        if data.next_in_game[row] && data.full_search[row + 1] {
            copy(entries(row + 1), &mut batch.reply_moves, &mut batch.reply_probs);
        }
        batch.reply_offsets.push(batch.reply_moves.len() as u32);
        let target = match data.result[row] {
            1 => [1.0, 0.0, 0.0],
            -1 => [0.0, 0.0, 1.0],
            _ => [0.0, 1.0, 0.0],
        };
        batch.wdl_target.extend_from_slice(&target);
        batch.root_wdl.extend_from_slice(&data.root_wdl[row * 3..row * 3 + 3]);
        batch.plies_to_end.push(data.plies_to_end[row] as f32);
        batch.full_search.push(u8::from(data.full_search[row]));
        batch.quiet_plies.push(data.quiet_plies[row]);
        batch.repetitions.push(data.repetitions[row]);
        batch.mirrored.push(u8::from(mirror));
        batch.size += 1;
    }
}

/// The batches of one epoch: the window's samples in a random order, each drawn once.
#[derive(Debug)]
pub struct EpochBatches<'a> {
    window: &'a ReplayWindow,
    epoch: u64,
    order: Vec<u32>,
    next: usize,
    index: u64,
    rng: ChaCha8Rng,
}

impl Iterator for EpochBatches<'_> {
    type Item = Batch;

    fn next(&mut self) -> Option<Batch> {
        let config = &self.window.config;
        let left = self.order.len() - self.next;
        if left == 0 || (config.drop_last && left < config.batch_size) {
            return None;
        }
        let size = left.min(config.batch_size);
        let mut batch = Batch::with_capacity(size);
        batch.epoch = self.epoch;
        batch.index = self.index;
        for k in self.next..self.next + size {
            let mirror = config.mirror_probability > 0.0 && self.rng.random_bool(config.mirror_probability);
            self.window.push_row(&mut batch, self.order[k] as usize, mirror);
        }
        self.next += size;
        self.index += 1;
        Some(batch)
    }
}

/// A background thread that runs the replay window's epochs and hands out batches through a
/// bounded channel, so that the trainer never waits on I/O. Dropping it stops the thread.
///
/// Errors (a shard that cannot be read, a bad manifest) arrive as `Err` items, after which the
/// loader ends.
#[derive(Debug)]
pub struct ReplayLoader {
    rx: Option<Receiver<Result<Batch>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl ReplayLoader {
    /// Starts the loader thread on the dataset in `dir`.
    pub fn spawn(dir: impl AsRef<Path>, config: ReplayConfig) -> Result<ReplayLoader> {
        ReplayLoader::spawn_at(DatasetLocation::from(dir.as_ref()), config)
    }

    /// Starts the loader thread on the dataset at `location` (a folder or an object store prefix).
    pub fn spawn_at(location: DatasetLocation, config: ReplayConfig) -> Result<ReplayLoader> {
        config.check()?;
        let (tx, rx) = sync_channel(config.prefetch);
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("xqz-replay".into())
            .spawn(move || {
                if let Err(err) = run_loader(location, config, &tx, &thread_stop) {
                    let _ = tx.send(Err(err));
                }
            })
            .map_err(|e| DatasetError::Loader(e.to_string()))?;
        Ok(ReplayLoader { rx: Some(rx), stop, handle: Some(handle) })
    }

    /// The next batch, waiting for it if needed; `None` once all epochs are done (or after an error).
    pub fn next_batch(&mut self) -> Option<Result<Batch>> {
        match self.rx.as_ref()?.recv() {
            Ok(item) => Some(item),
            Err(_) => {
                // The thread ended: report a panic once.
                self.rx = None;
                match self.handle.take().map(JoinHandle::join) {
                    Some(Err(_)) => Some(Err(DatasetError::Loader("the loader thread panicked".into()))),
                    _ => None,
                }
            }
        }
    }
}

impl Iterator for ReplayLoader {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        self.next_batch()
    }
}

impl Drop for ReplayLoader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.rx = None; // a blocked send now fails
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

/// Sends `item` (blocking while the channel is full), returning false when the loader should stop.
fn send(tx: &SyncSender<Result<Batch>>, stop: &AtomicBool, item: Result<Batch>) -> bool {
    !stop.load(Ordering::Relaxed) && tx.send(item).is_ok()
}

fn run_loader(
    location: DatasetLocation,
    config: ReplayConfig,
    tx: &SyncSender<Result<Batch>>,
    stop: &AtomicBool,
) -> Result<()> {
    let mut window = ReplayWindow::open_at(location, config.clone())?;
    let enough =
        |w: &ReplayWindow| w.len() >= config.min_samples.max(1) && (!config.drop_last || w.len() >= config.batch_size);
    while !enough(&window) {
        std::thread::park_timeout(config.poll_interval);
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        window.refresh()?;
    }
    let mut epoch = 0;
    while config.epochs.is_none_or(|n| epoch < n) {
        if epoch > 0 && config.refresh_each_epoch {
            window.refresh()?;
        }
        for batch in window.epoch(epoch) {
            if !send(tx, stop, Ok(batch)) {
                return Ok(());
            }
        }
        epoch += 1;
    }
    Ok(())
}
