//! `xqz uci`: a checkpoint as a UCI engine (the Pikafish dialect) on stdin/stdout.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use xqz_mcts::{EvalError, Evaluator};
use xqz_net::service::{Client, InferenceService, ServiceConfig};
use xqz_uci::{Engine, Options};

/// Options of `xqz uci` (each also a UCI option a GUI may change).
#[derive(Args)]
pub struct UciArgs {
    /// The checkpoint (its .json file), or `shipped` for the model built in; the `ModelFile`
    /// option.
    #[arg(long, default_value = crate::model::SHIPPED)]
    model: String,
    #[command(flatten)]
    device: crate::model::DeviceArg,
    /// CPU threads of the network.
    #[arg(long, default_value_t = 1)]
    threads: u32,
    /// Playouts of a search when `go` sets no limit.
    #[arg(long, default_value_t = 800)]
    playouts: u32,
    /// Leaves the search hands the network at once.
    #[arg(long, default_value_t = 8)]
    batch_size: u32,
    /// An opening book (`xqz book build`) to play from while the position is in it; the
    /// `BookFile` option (`OwnBook` turns it off and on).
    #[arg(long)]
    book: Option<String>,
}

/// Opens a book for the engine: its move in a position is the one played in most games, else the
/// one its search visited most.
fn open_book(path: &str) -> Result<xqz_uci::BookProbe, xqz_uci::BookError> {
    let book = xqz_book::Book::open(path)?;
    Ok(Box::new(move |pos: &xiangqi::Position| {
        let Some(entry) = book.probe(pos)? else { return Ok(None) };
        let Some(best) = entry.moves.first() else { return Ok(None) };
        let opening = match (&entry.ecco, &entry.opening) {
            (Some(code), Some(name)) => format!(", {code} {name}"),
            _ => String::new(),
        };
        let counts = match (best.games, best.value, best.visits) {
            // A move that only `xqz book grow` added: its search is all the book knows of it.
            (0, Some(value), Some(visits)) => format!("value {value:+.2}, {visits} visits"),
            _ => format!("{} games, {}/{}/{}", best.games, best.wins, best.draws, best.losses),
        };
        Ok(Some(xqz_uci::BookChoice { mv: best.mv, note: format!("{counts}{opening}") }))
    }))
}

/// A checkpoint's network behind its own batching service.
pub struct NetEvaluator {
    // Declared first so that it goes before the service it talks to.
    client: Client,
    _service: InferenceService,
}

impl NetEvaluator {
    /// Loads the checkpoint whose metadata is at `path` onto `device` (cpu, cuda, cuda:N or auto).
    pub fn load(path: &Path, device: &str, max_batch: usize) -> Result<NetEvaluator> {
        let device = xqz_net::parse_device(device)?;
        let config = ServiceConfig { max_batch: max_batch.max(1), ..ServiceConfig::default() };
        let (service, _) = crate::model::serve(path, device, config)?;
        Ok(NetEvaluator { client: service.client(), _service: service })
    }
}

impl Evaluator for NetEvaluator {
    fn evaluate(&mut self, games: &[&xiangqi::game::Game]) -> Result<Vec<xqz_mcts::Evaluation>, EvalError> {
        Evaluator::evaluate(&mut self.client, games)
    }

    fn submit(&mut self, games: &[&xiangqi::game::Game]) -> xqz_mcts::Pending {
        Evaluator::submit(&mut self.client, games)
    }

    fn batches_in_flight(&self) -> usize {
        self.client.batches_in_flight()
    }
}

fn load(options: &Options) -> Result<Box<dyn Evaluator>, String> {
    if options.model.is_empty() {
        return Err("no ModelFile set (xqz uci --model CKPT, or setoption name ModelFile value CKPT)".into());
    }
    tch::set_num_threads(options.threads as i32);
    NetEvaluator::load(Path::new(&options.model), &options.device, options.batch_size as usize)
        .map(|e| Box::new(e) as Box<dyn Evaluator>)
        .map_err(|e| format!("{e:#}"))
}

pub fn run(args: &UciArgs) -> Result<()> {
    let options = Options {
        model: args.model.clone(),
        device: args.device.device.clone(),
        threads: args.threads.max(1),
        playouts: args.playouts.max(1),
        batch_size: args.batch_size.max(1),
        book_file: args.book.clone().unwrap_or_default(),
        ..Options::default()
    };
    let engine = Engine::new(&format!("xqz {}", env!("CARGO_PKG_VERSION")), Box::new(load))
        .with_options(options)
        .with_books(Box::new(open_book));
    engine.run(std::io::BufReader::new(std::io::stdin()), std::io::stdout().lock())?;
    Ok(())
}
