//! `HSCALE ...` admin commands, parsed from the statement text.
//!
//! ```text
//! HSCALE SETUP_TABLE('table', 'column', 'default_table', 'backend', 'FUNCTION')
//! HSCALE ADD_PARTITION('table', 'partition', 'value', 'backend')
//! HSCALE DROP_PARTITION('table', 'partition')
//! HSCALE MOVE_PARTITION('table', 'partition', 'backend')
//! HSCALE CANCEL_OPERATION(id)
//! HSCALE SWITCHOVER('backend', 'replica address')
//! HSCALE REJOIN('backend', 'server address')
//! HSCALE AUTO_PARTITION('table', 'ROUND_ROBIN' | 'FEWEST_ROWS' | 'OFF')
//! HSCALE SETUP_GLOBAL_TABLE('table')
//! HSCALE SHOW PARTITIONS [('table')] | SHOW TABLES | SHOW BACKENDS
//! HSCALE SHOW DIGESTS | RESET DIGESTS
//! HSCALE EXPLAIN <statement>
//! HSCALE RELOAD
//! ```
//! Backends are named as in the config; a number is the backend's position
//! (1-based, as in the original HSCALE).

use crate::{BackendId, HashingFunction};

/// A backend as written in a command: a name, or a 1-based position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendRef {
    Name(String),
    Position(usize),
}

impl BackendRef {
    /// Resolve against the configured backend names to an index.
    pub fn resolve(&self, names: &[&str]) -> Result<BackendId, AdminError> {
        match self {
            BackendRef::Name(n) => names
                .iter()
                .position(|b| b == n)
                .map(BackendId::new)
                .ok_or_else(|| AdminError::UnknownBackend(n.clone())),
            BackendRef::Position(p) if *p >= 1 && *p <= names.len() => Ok(BackendId::new(p - 1)),
            BackendRef::Position(p) => Err(AdminError::UnknownBackend(p.to_string())),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminCommand {
    SetupTable {
        table: String,
        column: String,
        default_table: String,
        backend: BackendRef,
        function: HashingFunction,
    },
    AddPartition {
        table: String,
        partition: String,
        value: String,
        backend: BackendRef,
    },
    DropPartition {
        table: String,
        partition: String,
    },
    /// Move a partition to another backend while it is read and written.
    MovePartition {
        table: String,
        partition: String,
        backend: BackendRef,
    },
    SetupGlobalTable {
        table: String,
    },
    ShowPartitions {
        table: Option<String>,
    },
    ShowTables,
    ShowBackends,
    /// The operations journal: running and recent partition changes.
    ShowOperations,
    /// Open transactions across backends, prepared branches in doubt and
    /// commit decisions awaiting cleanup.
    ShowTransactions,
    /// This proxy's query digests, and forgetting them.
    ShowDigests,
    ResetDigests,
    /// Every proxy registered on the main backend (the fleet), with its
    /// heartbeat.
    ShowProxies,
    /// Each client user's connections, statements, waits and limits on
    /// this proxy (tenants).
    ShowUsers,
    /// Auto-partitioning on (with a placement rule) or off (`None`).
    AutoPartition {
        table: String,
        placement: Option<crate::dictionary::Placement>,
    },
    /// Stop a partition change that has not reached its cutover and undo it.
    CancelOperation {
        id: u64,
    },
    Explain {
        statement: String,
    },
    Reload,
    /// Keep reads of a table in the result cache (`EXACT` or `TTL`).
    CacheTable {
        table: String,
        rule: crate::dictionary::CacheRule,
    },
    /// Stop caching reads of a table (and drop its version triggers).
    UncacheTable {
        table: String,
    },
    /// Keep reads of one statement's shape (its fingerprint), `EXACT`
    /// or for a TTL.
    CacheStatement {
        statement: String,
        rule: crate::dictionary::CacheRule,
    },
    UncacheStatement {
        statement: String,
    },
    /// Forget every answer this proxy's result cache holds.
    FlushCache,
    /// The cached tables and this proxy's cache figures.
    ShowCache,
    /// Make a replica of a backend its primary (maintenance): the old
    /// primary becomes a replica of it.
    Switchover {
        backend: BackendRef,
        replica: String,
    },
    /// Make a server of a backend's set that is not its primary (an old
    /// primary back after a failover) a replica of the primary, if it
    /// holds nothing the primary lacks.
    Rejoin {
        backend: BackendRef,
        server: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    #[error("unknown HSCALE command {0:?}; commands are SETUP_TABLE, ADD_PARTITION, DROP_PARTITION, MOVE_PARTITION, CANCEL_OPERATION, SWITCHOVER, REJOIN, AUTO_PARTITION, SETUP_GLOBAL_TABLE, SHOW PARTITIONS, SHOW TABLES, SHOW BACKENDS, SHOW OPERATIONS, SHOW TRANSACTIONS, SHOW DIGESTS, SHOW PROXIES, SHOW USERS, SHOW CACHE, RESET DIGESTS, CACHE_TABLE, UNCACHE_TABLE, CACHE_STATEMENT, UNCACHE_STATEMENT, FLUSH CACHE, EXPLAIN and RELOAD")]
    UnknownCommand(String),
    #[error("HSCALE {command} takes {expected}, got {got} argument(s)")]
    Arguments {
        command: &'static str,
        expected: &'static str,
        got: usize,
    },
    #[error("HSCALE {command}: {problem}")]
    Syntax { command: String, problem: String },
    #[error("unknown backend {0:?}")]
    UnknownBackend(String),
    #[error(transparent)]
    Function(#[from] crate::HashError),
}

/// An argument: a quoted string or a bare number or word.
fn parse_args(command: &str, text: &str) -> Result<Vec<String>, AdminError> {
    let syntax = |problem: &str| AdminError::Syntax {
        command: command.to_string(),
        problem: problem.to_string(),
    };
    let t = text.trim();
    if t.is_empty() {
        return Ok(Vec::new());
    }
    let inner = t
        .strip_prefix('(')
        .and_then(|r| {
            r.trim_end()
                .trim_end_matches(';')
                .trim_end()
                .strip_suffix(')')
        })
        .ok_or_else(|| syntax("arguments must be in parentheses"))?;
    let mut args = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        let mut arg = String::new();
        if c == '\'' || c == '"' {
            chars.next();
            let mut closed = false;
            while let Some(ch) = chars.next() {
                if ch == '\\' {
                    if let Some(n) = chars.next() {
                        arg.push(n);
                    }
                } else if ch == c {
                    if chars.peek() == Some(&c) {
                        chars.next();
                        arg.push(c);
                    } else {
                        closed = true;
                        break;
                    }
                } else {
                    arg.push(ch);
                }
            }
            if !closed {
                return Err(syntax("unterminated string"));
            }
        } else {
            while let Some(&ch) = chars.peek() {
                if ch == ',' || ch.is_whitespace() {
                    break;
                }
                arg.push(ch);
                chars.next();
            }
        }
        args.push(arg);
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => break,
            Some(',') => continue,
            Some(_) => return Err(syntax("expected a comma between arguments")),
        }
    }
    Ok(args)
}

fn backend_ref(s: &str) -> BackendRef {
    match s.parse::<usize>() {
        Ok(p) => BackendRef::Position(p),
        Err(_) => BackendRef::Name(s.to_string()),
    }
}

/// Parse an admin command; `text` starts with `HSCALE`.
pub fn parse(text: &str) -> Result<AdminCommand, AdminError> {
    let t = text.trim().trim_end_matches(';').trim_end();
    let rest = t
        .get(6..)
        .filter(|_| t.len() >= 6 && t[..6].eq_ignore_ascii_case("HSCALE"))
        .ok_or_else(|| AdminError::UnknownCommand(t.to_string()))?
        .trim_start();
    let word_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let word = rest[..word_end].to_ascii_uppercase();
    let after = rest[word_end..].trim_start();
    match word.as_str() {
        "SETUP_TABLE" => {
            let a = parse_args("SETUP_TABLE", after)?;
            count(
                "SETUP_TABLE",
                "5 arguments ('table', 'column', 'default_table', 'backend', 'FUNCTION')",
                &a,
                5,
            )?;
            Ok(AdminCommand::SetupTable {
                table: a[0].clone(),
                column: a[1].clone(),
                default_table: a[2].clone(),
                backend: backend_ref(&a[3]),
                function: HashingFunction::parse(&a[4])?,
            })
        }
        "ADD_PARTITION" => {
            let a = parse_args("ADD_PARTITION", after)?;
            count(
                "ADD_PARTITION",
                "4 arguments ('table', 'partition', 'value', 'backend')",
                &a,
                4,
            )?;
            Ok(AdminCommand::AddPartition {
                table: a[0].clone(),
                partition: a[1].clone(),
                value: a[2].clone(),
                backend: backend_ref(&a[3]),
            })
        }
        "DROP_PARTITION" => {
            let a = parse_args("DROP_PARTITION", after)?;
            count(
                "DROP_PARTITION",
                "2 arguments ('table', 'partition')",
                &a,
                2,
            )?;
            Ok(AdminCommand::DropPartition {
                table: a[0].clone(),
                partition: a[1].clone(),
            })
        }
        "MOVE_PARTITION" => {
            let a = parse_args("MOVE_PARTITION", after)?;
            count(
                "MOVE_PARTITION",
                "3 arguments ('table', 'partition', 'backend')",
                &a,
                3,
            )?;
            Ok(AdminCommand::MovePartition {
                table: a[0].clone(),
                partition: a[1].clone(),
                backend: backend_ref(&a[2]),
            })
        }
        "AUTO_PARTITION" => parse_auto_partition(after),
        "CANCEL_OPERATION" => {
            let a = parse_args("CANCEL_OPERATION", after)?;
            count("CANCEL_OPERATION", "1 argument (operation id)", &a, 1)?;
            let id = a[0].trim().parse().map_err(|_| AdminError::Syntax {
                command: "CANCEL_OPERATION".into(),
                problem: format!("{:?} is not an operation id", a[0]),
            })?;
            Ok(AdminCommand::CancelOperation { id })
        }
        "CACHE_TABLE" => parse_cache_table(after),
        "CACHE_STATEMENT" => parse_cache_statement(after),
        "UNCACHE_STATEMENT" => {
            let a = parse_args("UNCACHE_STATEMENT", after)?;
            count("UNCACHE_STATEMENT", "1 argument ('statement')", &a, 1)?;
            Ok(AdminCommand::UncacheStatement {
                statement: a[0].clone(),
            })
        }
        "UNCACHE_TABLE" => {
            let a = parse_args("UNCACHE_TABLE", after)?;
            count("UNCACHE_TABLE", "1 argument ('table')", &a, 1)?;
            Ok(AdminCommand::UncacheTable {
                table: a[0].clone(),
            })
        }
        "FLUSH" if after.eq_ignore_ascii_case("CACHE") => Ok(AdminCommand::FlushCache),
        "SWITCHOVER" => {
            let a = parse_args("SWITCHOVER", after)?;
            count(
                "SWITCHOVER",
                "2 arguments ('backend', 'replica address')",
                &a,
                2,
            )?;
            Ok(AdminCommand::Switchover {
                backend: backend_ref(&a[0]),
                replica: a[1].trim().to_string(),
            })
        }
        "REJOIN" => {
            let a = parse_args("REJOIN", after)?;
            count("REJOIN", "2 arguments ('backend', 'server address')", &a, 2)?;
            Ok(AdminCommand::Rejoin {
                backend: backend_ref(&a[0]),
                server: a[1].trim().to_string(),
            })
        }
        "SETUP_GLOBAL_TABLE" => {
            let a = parse_args("SETUP_GLOBAL_TABLE", after)?;
            count("SETUP_GLOBAL_TABLE", "1 argument ('table')", &a, 1)?;
            Ok(AdminCommand::SetupGlobalTable {
                table: a[0].clone(),
            })
        }
        "SHOW" => parse_show(after),
        "EXPLAIN" if !after.is_empty() => Ok(AdminCommand::Explain {
            statement: after.to_string(),
        }),
        "RELOAD" if after.is_empty() => Ok(AdminCommand::Reload),
        "RESET" if after.eq_ignore_ascii_case("DIGESTS") => Ok(AdminCommand::ResetDigests),
        _ => Err(AdminError::UnknownCommand(rest.to_string())),
    }
}

/// `command`'s arguments `args` are `n`, as `expected` says.
fn count(
    command: &'static str,
    expected: &'static str,
    args: &[String],
    n: usize,
) -> Result<(), AdminError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(AdminError::Arguments {
            command,
            expected,
            got: args.len(),
        })
    }
}

/// `HSCALE AUTO_PARTITION('table', 'ROUND_ROBIN' | 'FEWEST_ROWS' | 'OFF')`.
fn parse_auto_partition(after: &str) -> Result<AdminCommand, AdminError> {
    let a = parse_args("AUTO_PARTITION", after)?;
    count(
        "AUTO_PARTITION",
        "2 arguments ('table', 'ROUND_ROBIN' | 'FEWEST_ROWS' | 'OFF')",
        &a,
        2,
    )?;
    let placement = if a[1].trim().eq_ignore_ascii_case("OFF") {
        None
    } else {
        Some(
            crate::dictionary::Placement::parse(&a[1]).ok_or_else(|| AdminError::Syntax {
                command: "AUTO_PARTITION".into(),
                problem: format!(
                    "placement {:?} is not ROUND_ROBIN, FEWEST_ROWS or OFF",
                    a[1]
                ),
            })?,
        )
    };
    Ok(AdminCommand::AutoPartition {
        table: a[0].clone(),
        placement,
    })
}

/// `HSCALE CACHE_TABLE('table', 'EXACT')` or `('table', 'TTL', milliseconds)`.
fn parse_cache_table(after: &str) -> Result<AdminCommand, AdminError> {
    let a = parse_args("CACHE_TABLE", after)?;
    let rule = parse_cache_rule("CACHE_TABLE", "table", &a)?;
    Ok(AdminCommand::CacheTable {
        table: a[0].clone(),
        rule,
    })
}

/// `HSCALE CACHE_STATEMENT('statement', 'EXACT')` or `('statement',
/// 'TTL', milliseconds)`.
fn parse_cache_statement(after: &str) -> Result<AdminCommand, AdminError> {
    let a = parse_args("CACHE_STATEMENT", after)?;
    let rule = parse_cache_rule("CACHE_STATEMENT", "statement", &a)?;
    Ok(AdminCommand::CacheStatement {
        statement: a[0].clone(),
        rule,
    })
}

/// The rule of `command`'s arguments `a` (what, then 'EXACT', or 'TTL'
/// and milliseconds).
fn parse_cache_rule(
    command: &'static str,
    what: &str,
    a: &[String],
) -> Result<crate::dictionary::CacheRule, AdminError> {
    if !(2..=3).contains(&a.len()) {
        return Err(AdminError::Arguments {
            command,
            expected: if what == "table" {
                "2 or 3 arguments ('table', 'EXACT') or ('table', 'TTL', milliseconds)"
            } else {
                "2 or 3 arguments ('statement', 'EXACT') or ('statement', 'TTL', milliseconds)"
            },
            got: a.len(),
        });
    }
    let syntax = |problem: String| AdminError::Syntax {
        command: command.into(),
        problem,
    };
    let ttl = match a.get(2) {
        Some(ms) => ms
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&ms| ms > 0)
            .ok_or_else(|| syntax(format!("{ms:?} is not a TTL in milliseconds")))?,
        None => 0,
    };
    let mode = a[1].trim();
    if mode.eq_ignore_ascii_case("EXACT") && a.len() == 2 {
        Ok(crate::dictionary::CacheRule::Exact)
    } else if mode.eq_ignore_ascii_case("TTL") && a.len() == 3 {
        Ok(crate::dictionary::CacheRule::Ttl(ttl))
    } else {
        Err(syntax(format!(
            "mode {mode:?} with {} argument(s): 'EXACT' takes none, 'TTL' a time in milliseconds",
            a.len() - 2
        )))
    }
}

/// `HSCALE SHOW ...`: what follows SHOW.
fn parse_show(after: &str) -> Result<AdminCommand, AdminError> {
    let what_end = after
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(after.len());
    let what = after[..what_end].to_ascii_uppercase();
    let args_text = &after[what_end..];
    match what.as_str() {
        "PARTITIONS" => {
            let a = parse_args("SHOW PARTITIONS", args_text)?;
            if a.len() > 1 {
                return Err(AdminError::Arguments {
                    command: "SHOW PARTITIONS",
                    expected: "no argument or 1 ('table')",
                    got: a.len(),
                });
            }
            Ok(AdminCommand::ShowPartitions {
                table: a.into_iter().next(),
            })
        }
        "TABLES" if args_text.trim().is_empty() => Ok(AdminCommand::ShowTables),
        "BACKENDS" if args_text.trim().is_empty() => Ok(AdminCommand::ShowBackends),
        "OPERATIONS" if args_text.trim().is_empty() => Ok(AdminCommand::ShowOperations),
        "TRANSACTIONS" if args_text.trim().is_empty() => Ok(AdminCommand::ShowTransactions),
        "DIGESTS" if args_text.trim().is_empty() => Ok(AdminCommand::ShowDigests),
        "PROXIES" if args_text.trim().is_empty() => Ok(AdminCommand::ShowProxies),
        "USERS" if args_text.trim().is_empty() => Ok(AdminCommand::ShowUsers),
        "CACHE" if args_text.trim().is_empty() => Ok(AdminCommand::ShowCache),
        _ => Err(AdminError::UnknownCommand(format!("SHOW {}", after.trim()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        assert_eq!(
            parse("HSCALE SETUP_TABLE('users', 'nickname', 'users_default', 1, 'PREFIX(3)')")
                .unwrap(),
            AdminCommand::SetupTable {
                table: "users".into(),
                column: "nickname".into(),
                default_table: "users_default".into(),
                backend: BackendRef::Position(1),
                function: HashingFunction::Prefix(3),
            }
        );
        assert_eq!(
            parse("hscale add_partition('users', 'nick1', 'mar', 'shard1');").unwrap(),
            AdminCommand::AddPartition {
                table: "users".into(),
                partition: "nick1".into(),
                value: "mar".into(),
                backend: BackendRef::Name("shard1".into()),
            }
        );
        assert_eq!(
            parse("HSCALE SHOW PARTITIONS").unwrap(),
            AdminCommand::ShowPartitions { table: None }
        );
        assert_eq!(
            parse("HSCALE SHOW PARTITIONS('t')").unwrap(),
            AdminCommand::ShowPartitions {
                table: Some("t".into())
            }
        );
        assert_eq!(
            parse("HSCALE SHOW BACKENDS").unwrap(),
            AdminCommand::ShowBackends
        );
        assert_eq!(parse("HSCALE RELOAD").unwrap(), AdminCommand::Reload);
        assert_eq!(
            parse("HSCALE CANCEL_OPERATION(12)").unwrap(),
            AdminCommand::CancelOperation { id: 12 }
        );
        assert_eq!(
            parse("HSCALE SWITCHOVER('shard0', '10.0.0.11:3306')").unwrap(),
            AdminCommand::Switchover {
                backend: BackendRef::Name("shard0".into()),
                replica: "10.0.0.11:3306".into()
            }
        );
        assert!(parse("HSCALE SWITCHOVER('shard0')").is_err());
        assert_eq!(
            parse("HSCALE REJOIN('shard0', '10.0.0.10:3306')").unwrap(),
            AdminCommand::Rejoin {
                backend: BackendRef::Name("shard0".into()),
                server: "10.0.0.10:3306".into(),
            }
        );
        assert!(parse("HSCALE REJOIN('shard0')").is_err());
        assert_eq!(
            parse("hscale cancel_operation('7');").unwrap(),
            AdminCommand::CancelOperation { id: 7 }
        );
        assert!(parse("HSCALE CANCEL_OPERATION('x')").is_err());
        assert_eq!(
            parse("HSCALE AUTO_PARTITION('t', 'round_robin')").unwrap(),
            AdminCommand::AutoPartition {
                table: "t".into(),
                placement: Some(crate::dictionary::Placement::RoundRobin)
            }
        );
        assert_eq!(
            parse("HSCALE AUTO_PARTITION('db.t', 'OFF')").unwrap(),
            AdminCommand::AutoPartition {
                table: "db.t".into(),
                placement: None
            }
        );
        assert!(parse("HSCALE AUTO_PARTITION('t', 'random')").is_err());
        assert!(parse("HSCALE CANCEL_OPERATION(1, 2)").is_err());
        assert_eq!(
            parse("HSCALE MOVE_PARTITION('db.t', 'p1', 'shard2')").unwrap(),
            AdminCommand::MovePartition {
                table: "db.t".into(),
                partition: "p1".into(),
                backend: BackendRef::Name("shard2".into()),
            }
        );
        assert_eq!(
            parse("HSCALE SHOW OPERATIONS").unwrap(),
            AdminCommand::ShowOperations
        );
        assert_eq!(
            parse("HSCALE SHOW DIGESTS").unwrap(),
            AdminCommand::ShowDigests
        );
        assert_eq!(
            parse("hscale show proxies").unwrap(),
            AdminCommand::ShowProxies
        );
        assert_eq!(parse("HSCALE SHOW USERS").unwrap(), AdminCommand::ShowUsers);
        assert_eq!(
            parse("hscale reset digests").unwrap(),
            AdminCommand::ResetDigests
        );
        assert!(parse("HSCALE RESET").is_err());
        assert_eq!(
            parse("HSCALE SHOW OPERATIONS").unwrap(),
            AdminCommand::ShowOperations
        );
        assert_eq!(
            parse("hscale show transactions").unwrap(),
            AdminCommand::ShowTransactions
        );
        assert_eq!(
            parse("HSCALE EXPLAIN SELECT * FROM t WHERE a = 1").unwrap(),
            AdminCommand::Explain {
                statement: "SELECT * FROM t WHERE a = 1".into()
            }
        );
        assert_eq!(
            parse("HSCALE ADD_PARTITION('t', 'p', 'it''s', 2)").unwrap(),
            AdminCommand::AddPartition {
                table: "t".into(),
                partition: "p".into(),
                value: "it's".into(),
                backend: BackendRef::Position(2),
            }
        );
    }

    #[test]
    fn cache_commands() {
        assert_eq!(
            parse("HSCALE CACHE_TABLE('db.t', 'exact')").unwrap(),
            AdminCommand::CacheTable {
                table: "db.t".into(),
                rule: crate::dictionary::CacheRule::Exact
            }
        );
        assert_eq!(
            parse("HSCALE CACHE_TABLE('t', 'TTL', 5000);").unwrap(),
            AdminCommand::CacheTable {
                table: "t".into(),
                rule: crate::dictionary::CacheRule::Ttl(5000)
            }
        );
        assert!(parse("HSCALE CACHE_TABLE('t', 'TTL')").is_err());
        assert!(parse("HSCALE CACHE_TABLE('t', 'TTL', 0)").is_err());
        assert!(parse("HSCALE CACHE_TABLE('t', 'EXACT', 5)").is_err());
        assert!(parse("HSCALE CACHE_TABLE('t', 'SOMETIMES')").is_err());
        assert_eq!(
            parse("HSCALE UNCACHE_TABLE('t')").unwrap(),
            AdminCommand::UncacheTable { table: "t".into() }
        );
        assert_eq!(
            parse("hscale flush cache").unwrap(),
            AdminCommand::FlushCache
        );
        assert_eq!(parse("HSCALE SHOW CACHE").unwrap(), AdminCommand::ShowCache);
        assert_eq!(
            parse("HSCALE CACHE_STATEMENT('SELECT * FROM t WHERE id = ''a''', 'ttl', 100)")
                .unwrap(),
            AdminCommand::CacheStatement {
                statement: "SELECT * FROM t WHERE id = 'a'".into(),
                rule: crate::dictionary::CacheRule::Ttl(100)
            }
        );
        assert_eq!(
            parse("HSCALE CACHE_STATEMENT('SELECT v FROM t', 'exact')").unwrap(),
            AdminCommand::CacheStatement {
                statement: "SELECT v FROM t".into(),
                rule: crate::dictionary::CacheRule::Exact
            }
        );
        assert!(parse("HSCALE CACHE_STATEMENT('SELECT 1', 'EXACT', 100)").is_err());
        assert!(parse("HSCALE CACHE_STATEMENT('SELECT 1', 'TTL')").is_err());
        assert!(parse("HSCALE CACHE_STATEMENT('SELECT 1', 'TTL', 0)").is_err());
        assert_eq!(
            parse("HSCALE UNCACHE_STATEMENT('SELECT 1')").unwrap(),
            AdminCommand::UncacheStatement {
                statement: "SELECT 1".into()
            }
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let e = parse("HSCALE SETUP_TABLE('t', 'c')")
            .unwrap_err()
            .to_string();
        assert!(e.contains("takes 5 arguments"), "{e}");
        let e = parse("HSCALE SETUP_TABLE('t', 'c', 'd', 1, 'SHA(3)')")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown hashing function"), "{e}");
        let e = parse("HSCALE FROB").unwrap_err().to_string();
        assert!(e.contains("unknown HSCALE command"), "{e}");
        let e = parse("HSCALE ADD_PARTITION('t', 'p', 'v)")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unterminated"), "{e}");
        assert_eq!(
            BackendRef::Name("x".into())
                .resolve(&["main", "shard1"])
                .unwrap_err()
                .to_string(),
            "unknown backend \"x\""
        );
        assert_eq!(
            BackendRef::Position(2)
                .resolve(&["main", "shard1"])
                .unwrap(),
            BackendId::new(1)
        );
        assert!(BackendRef::Position(3)
            .resolve(&["main", "shard1"])
            .is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,60}") {
            let _ = parse(&format!("HSCALE {s}"));
            let _ = parse(&s);
        }
    }
}
