//! `herald serve | migrate | config`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use herald::app::{Application, open_store, shutdown_signal};
use herald::Config;

#[derive(Parser)]
#[command(name = "herald", version, about = "Self-hosted email delivery and audience platform")]
struct Cli {
    /// TOML configuration file (also HERALD_CONFIG); environment variables override it.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API and the background workers.
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Print the effective configuration (secrets redacted).
    Config,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HERALD_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn")),
        )
        .init();
    let config = Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Serve => {
            let app = Application::build(config).await?;
            app.run_until_stopped(shutdown_signal()).await?;
        }
        Command::Migrate => {
            let store = open_store(&config).await?;
            println!("migrations applied ({} database {})", store.engine_name(), config.database_description());
        }
        Command::Config => print!("{}", config.redacted_toml()),
    }
    Ok(())
}
