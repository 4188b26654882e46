//! `xqz state light`: a stopped run's light state, small enough to carry anywhere (a repository
//! commit, another machine) and resumed by `xqz run --state`: its settings, the trainer's
//! checkpoint published last with its optimizer and counters, every model's metadata with the latest model's
//! weights, the settings versions. No dataset: the resumed run refills its replay window with
//! fresh self-play (docs/TRAINING.md, "A run that outlives its machine").

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use xqz_dataset::DatasetLocation;
use xqz_run_folder::{RunFolder, RunState};

/// `xqz state` commands.
#[derive(Subcommand)]
pub enum StateCommand {
    /// Write a stopped run's light state to a folder or an object store prefix: what `xqz run
    /// --state` resumes from, without the dataset and the older weights.
    Light(LightArgs),
}

/// Options of `xqz state light`.
#[derive(Args)]
pub struct LightArgs {
    /// The run's folder (`runs/NAME`), stopped.
    #[arg(long)]
    run: PathBuf,
    /// Where to write the state: a folder, or an object store prefix (`s3://bucket/prefix`).
    #[arg(long)]
    out: String,
}

pub fn run(command: StateCommand) -> Result<()> {
    match command {
        StateCommand::Light(args) => light(&args),
    }
}

fn light(args: &LightArgs) -> Result<()> {
    let run = RunFolder::new(&args.run);
    anyhow::ensure!(
        run.settings_file().exists(),
        "{} is not a run folder of `xqz run` (it has no settings.toml)",
        run.root().display()
    );
    let trainer = xqz_trainer::light_state_files(run.trainer().root())?;
    anyhow::ensure!(!trainer.is_empty(), "{} has no checkpoint yet: nothing to resume from", run.root().display());
    let coordinator = xqz_coordinator::light_state_files(&run.coordinator_dir())?;
    let own = run.state_files()?.into_iter().map(|(name, bytes)| (name.to_string(), bytes)).collect();
    let state = RunState::new(&args.out);
    let mut bytes = 0;
    // The run's settings last: `xqz run --state` takes a state with them as a run to resume.
    for (part, files) in [(state.coordinator(), coordinator), (state.trainer(), trainer), (state.run(), own)] {
        bytes += files.iter().map(|(_, b)| b.len()).sum::<usize>();
        let location = DatasetLocation::parse(&part)?;
        location.put_files(files).with_context(|| format!("writing {part}"))?;
    }
    println!("light state of {} in {} ({:.1} MB)", run.root().display(), state.location(), bytes as f64 / 1e6);
    Ok(())
}
