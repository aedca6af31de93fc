//! The `hscale` binary: `serve`, `check` and `playground`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "hscale", version, about = "A multi-core MySQL sharding proxy")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy.
    Serve {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Validate a configuration file and say exactly what is wrong.
    Check {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Start MariaDB servers and a proxy in front of them.
    Playground {
        #[arg(long, default_value_t = 2)]
        shards: usize,
        #[arg(long, default_value = "127.0.0.1:6033")]
        listen: String,
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Load a small demo schema with data.
        #[arg(long)]
        demo: bool,
        /// `[proxy] change_copy_rows_per_s` of the playground's proxy.
        #[arg(long, default_value_t = 0)]
        copy_rows_per_s: u64,
        /// The servers' InnoDB buffer pool in MiB (default 64).
        #[arg(long)]
        buffer_pool_mb: Option<u64>,
        /// One more option for every MariaDB server started (repeatable),
        /// e.g. `--server-option=--thread-handling=pool-of-threads`.
        #[arg(long = "server-option", allow_hyphen_values = true)]
        server_options: Vec<String>,
        /// Replicas per server (MariaDB GTID replication), listed in the
        /// config's `[[backends]] replicas`.
        #[arg(long, default_value_t = 0)]
        replicas: usize,
        /// `[proxy] failover_after_ms` of the playground's proxy (0: no
        /// automatic failover).
        #[arg(long, default_value_t = 0)]
        failover_after_ms: u64,
    },
}

fn main() -> std::process::ExitCode {
    // Before any other thread exists (`huge_text.rs`).
    let text = hscale::huge_text::remap();
    let cli = Cli::parse();
    match cli.command {
        Command::Check { config } => match hscale::Config::load(&config) {
            Ok(cfg) => {
                println!(
                    "{}: ok ({} user(s), {} backend(s), main backend {:?})",
                    config.display(),
                    cfg.users.len(),
                    cfg.backends.len(),
                    cfg.backends[0].name
                );
                std::process::ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::ExitCode::FAILURE
            }
        },
        Command::Serve { config } => {
            let cfg = match hscale::Config::load(&config) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{e}");
                    return std::process::ExitCode::FAILURE;
                }
            };
            hscale::logging::init(&cfg.log.filter);
            log_text(&text);
            match serve(cfg, &config) {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("hscale: {e}");
                    std::process::ExitCode::FAILURE
                }
            }
        }
        Command::Playground {
            shards,
            listen,
            data_dir,
            demo,
            copy_rows_per_s,
            buffer_pool_mb,
            server_options,
            replicas,
            failover_after_ms,
        } => {
            hscale::logging::init("warn");
            log_text(&text);
            match hscale::playground::run_playground(
                shards,
                &listen,
                data_dir.as_deref(),
                demo,
                copy_rows_per_s,
                buffer_pool_mb,
                server_options,
                (replicas, failover_after_ms),
            ) {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("hscale playground: {e}");
                    std::process::ExitCode::FAILURE
                }
            }
        }
    }
}

fn log_text(text: &Result<hscale::huge_text::Remapped, String>) {
    match text {
        Ok(r) => tracing::info!(
            bytes = r.bytes,
            huge_bytes = r.huge_bytes,
            "the proxy's code moved onto huge pages"
        ),
        Err(e) => tracing::warn!(error = %e, "the proxy's code stays on small pages"),
    }
}

/// Serve until SIGTERM (graceful: `[proxy] shutdown_timeout_ms`); SIGHUP
/// reloads users and limits from `path`.
fn serve(cfg: hscale::Config, path: &std::path::Path) -> anyhow::Result<()> {
    use hscale::server::Signal;
    let listen = cfg.proxy.listen.clone();
    let timeout = std::time::Duration::from_millis(cfg.proxy.shutdown_timeout_ms);
    let mut proxy = hscale::RunningProxy::start(cfg, &listen)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        loop {
            match hscale::server::next_signal(&mut hup).await {
                Signal::Stop => break,
                Signal::Reload => match hscale::Config::load(path) {
                    Ok(new) => {
                        let ignored = proxy.reload(&new);
                        tracing::info!(
                            users = new.users.len(),
                            "SIGHUP: reloaded users and limits"
                        );
                        if !ignored.is_empty() {
                            tracing::warn!(
                                settings = ignored.join(", "),
                                "SIGHUP: these changed settings take effect only after a restart"
                            );
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "SIGHUP: config not reloaded")
                    }
                },
            }
        }
    });
    tracing::info!(
        sessions = proxy.context.open_sessions(),
        timeout_ms = timeout.as_millis() as u64,
        "stopping: no new connections, running statements may finish"
    );
    proxy.shutdown(timeout);
    tracing::info!("stopped");
    Ok(())
}
