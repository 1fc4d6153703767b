//! `coopscan`: generate, inspect, verify and simulate cooperative scans.

mod cmd_append;
mod cmd_checkpoint;
mod cmd_gen;
mod cmd_index;
mod cmd_inspect;
mod cmd_opt;
mod cmd_read_cost;
mod cmd_sim;
mod cmd_sql;
mod cmd_tpch;
mod cmd_verify;
mod device_args;
mod error_report;
mod session_args;
mod sim_replay;
mod table_printer;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "coopscan",
    version,
    about = "Cooperative scans: an Active Buffer Manager for concurrent table scans"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate TPC-H tables (tpchgen) into coopscan tables.
    Gen(cmd_gen::GenArgs),
    /// Print a table's manifest summary as JSON.
    Inspect(cmd_inspect::InspectArgs),
    /// Read every chunk through the device, check every checksum, print a content digest.
    Verify(cmd_verify::VerifyArgs),
    /// Time reading the first 1, 2, … columns of tables (the same rows in several
    /// layouts): requests, bytes and seconds per layout.
    ReadCost(cmd_read_cost::ReadCostArgs),
    /// Run the buffer policies on virtual time (the 2004 report's simulator).
    Sim(cmd_sim::SimArgs),
    /// Replay a piece-reference trace under OPT (Belady), LRU and PBM at several buffer sizes.
    Opt(cmd_opt::OptArgs),
    /// Run SQL over coopscan tables (an interactive prompt when no SQL is given).
    Sql(cmd_sql::SqlArgs),
    /// Build secondary indexes of a table's columns, or list them (`CREATE INDEX`).
    Index(cmd_index::IndexArgs),
    /// Merge tables' committed changes (INSERT, UPDATE, DELETE) into new stable images.
    Checkpoint(cmd_checkpoint::CheckpointArgs),
    /// Append a query's rows to a table as new pages (a bulk append), its committed
    /// changes kept.
    Append(Box<cmd_append::AppendArgs>),
    /// Run the 22 TPC-H queries over a database, timed, optionally checked against the
    /// kit's answer set.
    Tpch(cmd_tpch::TpchArgs),
    /// The concurrent-stream benchmark (Tables 2-4, Figures 4-8) under every policy.
    /// Boxed: its many flags would make every command as large as it.
    Bench(Box<coopscan_lab::bench_cmd::BenchArgs>),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(a) => cmd_gen::run(&a),
        Command::Inspect(a) => cmd_inspect::run(&a),
        Command::Verify(a) => cmd_verify::run(&a),
        Command::ReadCost(a) => cmd_read_cost::run(&a),
        Command::Sim(a) => cmd_sim::run(&a),
        Command::Opt(a) => cmd_opt::run(&a),
        Command::Sql(a) => cmd_sql::run(&a),
        Command::Index(a) => cmd_index::run(&a),
        Command::Checkpoint(a) => cmd_checkpoint::run(&a),
        Command::Append(a) => cmd_append::run(&a),
        Command::Tpch(a) => cmd_tpch::run(&a),
        Command::Bench(a) if cmd_tpch::bench::is_preset(&a.preset) => cmd_tpch::bench::run(&a),
        Command::Bench(a) if cmd_tpch::clotho::is_preset(&a.preset) => cmd_tpch::clotho::run(&a),
        Command::Bench(a) => coopscan_lab::bench_cmd::run(&a),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_report::error_chain(&e));
            std::process::ExitCode::FAILURE
        }
    }
}
