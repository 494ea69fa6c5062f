//! `herald serve | migrate | config | rotate-secret | outbox | mcp | demo`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use herald::Config;
use herald::app::{Application, open_store, shutdown_signal};
use herald::config::LogFormat;

#[derive(Parser)]
#[command(
    name = "herald",
    version,
    about = "Self-hosted email delivery and audience platform"
)]
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
    Serve {
        /// `all` (default): every route and the background work; `api`: every route, no
        /// background work; `worker`: the background work, and only /health and /metrics.
        /// Overrides HERALD_ROLE.
        #[arg(long, value_enum)]
        role: Option<herald::config::Role>,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// Print the effective configuration (secrets redacted).
    Config,
    /// Replace the server secret and re-seal every DKIM key under the new one (stop the
    /// servers first). The new secret comes from HERALD_NEW_SECRET, or is generated when the
    /// secret lives in the data directory; everyone signs in again afterwards. The old secret
    /// is kept as retired, so links in mail already sent keep working.
    RotateSecret {
        /// Instead of rotating, forget the retired secrets: links made with them stop working.
        #[arg(long)]
        drop_retired: bool,
    },
    /// The MCP server over stdio, for desktop AI clients (docs/mcp.md): forwards each tool
    /// call to the Herald server at HERALD_URL (default http://127.0.0.1:8080) with the
    /// project secret key in HERALD_API_KEY.
    Mcp,
    /// Create a project full of demo data (10,000 contacts, templates, a segment, a sent
    /// campaign with opens and clicks, an enabled workflow, 30 days of events) for a user,
    /// signed up if new, and print the dashboard's address. Works while a server runs on the
    /// same database; each run adds a project (Demo, Demo 2...). Demo mail never reaches a relay.
    Demo {
        /// The user's address (created if new).
        #[arg(long, default_value = herald::demo::DEFAULT_EMAIL)]
        email: String,
        /// The new user's password (generated if absent); an existing user keeps theirs.
        #[arg(long)]
        password: Option<String>,
    },
    /// List the messages kept by the local outbox transport, or print one (`--show ID`).
    Outbox {
        /// Print the raw message with this id.
        #[arg(long)]
        show: Option<String>,
    },
}

fn main() -> anyhow::Result<()> {
    // The allocator's option is set before the runtime's threads start (allocator.rs).
    herald::allocator::run_main(run())
}

async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut config = Config::load(cli.config.as_deref())?;
    if let Command::Serve { role: Some(role) } = cli.command {
        config.apply_role(role);
    }
    let filter = tracing_subscriber::EnvFilter::try_from_env("HERALD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    match config.log_format {
        // stdout carries the MCP protocol: logs go to stderr.
        _ if matches!(cli.command, Command::Mcp) => tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_env_filter(filter)
            .init(),
        // One JSON object per line: timestamp, level, target, fields and the span.
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_current_span(true)
            .with_env_filter(filter)
            .init(),
        LogFormat::Text => tracing_subscriber::fmt().with_env_filter(filter).init(),
    }
    match cli.command {
        Command::Serve { .. } => {
            // Batch threads while the node delivers (scheduling.rs).
            herald::scheduling::Governor::start_if_enabled(&config);
            // SQLite is one node: held until the process ends (single_node.rs).
            let _single_node = herald::single_node::lock(&config)?;
            let app = Application::build(config).await?;
            app.run_until_stopped(shutdown_signal()).await?;
        }
        Command::Migrate => {
            let store = open_store(&config).await?;
            println!(
                "migrations applied ({} database {})",
                store.engine_name(),
                config.database_description()
            );
        }
        Command::Config => print!("{}", config.redacted_toml()),
        Command::RotateSecret { drop_retired: true } => {
            let done = herald::rotate::drop_retired(&config)?;
            println!(
                "{} retired secret(s) dropped from {}; restart the servers",
                done.dropped,
                config.retired_secrets_file().display()
            );
            if done.configured_left > 0 {
                println!(
                    "HERALD_RETIRED_SECRETS still lists {}: remove them from the configuration",
                    done.configured_left
                );
            }
        }
        Command::RotateSecret {
            drop_retired: false,
        } => {
            let new = std::env::var("HERALD_NEW_SECRET").ok();
            let done = herald::rotate::rotate_secret(&config, new).await?;
            println!(
                "{} DKIM key(s) re-sealed ({} already under the new secret)",
                done.rotation.resealed, done.rotation.already_new
            );
            match done.written {
                Some(path) => println!("new secret written to {}", path.display()),
                None => println!(
                    "now configure the new secret (HERALD_SECRET), add the old one to \
                     HERALD_RETIRED_SECRETS so links in mail already sent keep working, and restart"
                ),
            }
            if let Some(path) = done.retired {
                println!(
                    "the old secret is kept in {} for links in mail already sent \
                     (herald rotate-secret --drop-retired forgets it)",
                    path.display()
                );
            }
        }
        Command::Outbox { show } => outbox(&config, show.as_deref())?,
        Command::Demo { email, password } => {
            let request = herald::demo::DemoRequest {
                email: Some(email),
                password,
                contacts: None,
            };
            let started = std::time::Instant::now();
            let done = herald::demo::run(&config, request).await?;
            print!("{}", done.report());
            println!("(made in {:.1} s)", started.elapsed().as_secs_f64());
        }
        Command::Mcp => {
            let url = std::env::var("HERALD_URL")
                .ok()
                .filter(|u| !u.trim().is_empty())
                .unwrap_or_else(|| "http://127.0.0.1:8080".into());
            let key = std::env::var("HERALD_API_KEY").ok();
            herald_mcp::stdio::run(&url, key, config.mcp_settings()).await?;
        }
    }
    Ok(())
}

fn outbox(config: &Config, show: Option<&str>) -> anyhow::Result<()> {
    let outbox = herald_mail::transport::OutboxTransport::new(config.data_dir.join("outbox"));
    if let Some(id) = show {
        let bytes = outbox
            .read(id)
            .map_err(|e| anyhow::anyhow!("reading message {id}: {e}"))?;
        use std::io::Write;
        std::io::stdout().write_all(&bytes)?;
        return Ok(());
    }
    let mut entries = outbox.list();
    entries.sort_by_key(|(_, _, at)| *at);
    println!("{} message(s) in {}", entries.len(), outbox.dir().display());
    for (id, size, at) in entries {
        let at: chrono::DateTime<chrono::Utc> = at.into();
        println!(
            "{id}  {size:>9} bytes  {}",
            at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
    }
    Ok(())
}
