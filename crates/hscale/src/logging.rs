//! `tracing` set-up: the filter comes from `RUST_LOG` if set, else from
//! the config's `[log] filter`. Every field of every log line is written
//! through [`Escaped`], so text a client chose (a user name, a statement,
//! a server error quoting it) cannot start a line of its own or send
//! terminal escapes, whichever module logs it.

use std::fmt::{self, Write as _};

use tracing_subscriber::field::MakeExt;
use tracing_subscriber::EnvFilter;

pub fn init(filter: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .fmt_fields(fields())
        .with_writer(std::io::stderr)
        .try_init();
}

/// How log fields are written: `name=value`, the value escaped.
pub fn fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> {
    tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        if field.name() == "message" {
            write!(w, "{}", Escaped(format_args!("{value:?}")))
        } else {
            write!(w, "{field}={}", Escaped(format_args!("{value:?}")))
        }
    })
    .delimited(" ")
}

/// Displays `T` with control characters (newlines, ESC, C1 controls) and
/// invisible Unicode formatting characters (bidirectional overrides, line
/// separators) written as `\u{..}` escapes.
pub struct Escaped<T>(pub T);

impl<T: fmt::Display> fmt::Display for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Escaper<'a, 'b>(&'a mut fmt::Formatter<'b>);
        impl fmt::Write for Escaper<'_, '_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                for c in s.chars() {
                    if is_unsafe(c) {
                        write!(self.0, "{}", c.escape_unicode())?;
                    } else {
                        self.0.write_char(c)?;
                    }
                }
                Ok(())
            }
        }
        write!(Escaper(f), "{}", self.0)
    }
}

fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// Statement text for debug logs, with anything that may hold a password hidden.
pub fn loggable(sql: &str) -> &str {
    let upper_has = |w: &str| {
        sql.as_bytes()
            .windows(w.len())
            .any(|win| win.eq_ignore_ascii_case(w.as_bytes()))
    };
    if upper_has("PASSWORD") || upper_has("IDENTIFIED") {
        "<statement hidden: it may contain a password>"
    } else {
        sql.get(..sql.len().min(1000)).unwrap_or(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        let s = Escaped("evil\nFORGED \x1b[31mred\u{202e}\u{85}ok ünïcode").to_string();
        assert_eq!(
            s,
            "evil\\u{a}FORGED \\u{1b}[31mred\\u{202e}\\u{85}ok ünïcode"
        );
    }

    /// A log line written through the subscriber's field format stays one
    /// line, whatever the fields hold and however they are recorded.
    #[test]
    fn log_lines_cannot_be_forged() {
        #[derive(Clone, Default)]
        struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let out = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(fields())
            .with_ansi(false)
            .with_writer(move || buf.clone())
            .finish();
        let user = "x\n2030-01-01T00:00:00Z  INFO forged line\x1b[2J";
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(user = %user, other = user, debug = ?user, "login {}", user);
        });
        let text = String::from_utf8(out.0.lock().unwrap_or_else(|p| p.into_inner()).clone())
            .unwrap_or_default();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(!text.contains('\x1b'), "{text}");
        assert!(text.contains("user=x\\u{a}2030"), "{text}");
    }
}
