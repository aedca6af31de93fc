//! What the executors of every session share besides the `Context`: the
//! reads in flight that identical reads wait for and share
//! (`coalesce.rs`) and the result cache (`cache.rs`). Made once per proxy
//! by `server.rs` (`RunningProxy::start`) and handed to each session's
//! `Bindings`; kept out of the `Context`, which sits below the executor
//! (`runtime.rs` imports nothing of it). The admin commands reach the
//! cache through [`crate::admin::cache::CachedAnswers`], which the
//! executor hands them.

use std::sync::Arc;

use super::cache::ResultCache;
use super::coalesce::Coalescer;
use crate::config::Config;
use crate::metrics::exposition::CacheSample;

/// The proxy's shared reads; cloned into each session (one count of the
/// cache's `Arc` per session, none per statement).
#[derive(Clone)]
pub struct SharedReads {
    /// The table of reads in flight: kept for the process's life, so a
    /// leader's turn holds it without a count.
    pub coalescer: &'static Coalescer,
    /// `None` with `[cache] max_bytes = 0`, the default.
    pub cache: Option<Arc<ResultCache>>,
}

impl SharedReads {
    pub fn new(config: &Config) -> SharedReads {
        SharedReads {
            coalescer: Box::leak(Box::new(Coalescer::new(
                config.proxy.coalesce,
                config.proxy.coalesce_max_members,
                std::time::Duration::from_millis(config.proxy.coalesce_turn_wait_ms),
            ))),
            cache: ResultCache::new(&config.cache).map(Arc::new),
        }
    }

    /// The cache as the admin commands see it.
    pub fn cached_answers(&self) -> Option<&dyn crate::admin::cache::CachedAnswers> {
        self.cache
            .as_deref()
            .map(|c| c as &dyn crate::admin::cache::CachedAnswers)
    }
}

impl crate::admin::cache::CachedAnswers for ResultCache {
    fn entries(&self) -> usize {
        ResultCache::entries(self)
    }

    fn flush(&self) {
        ResultCache::flush(self)
    }

    fn sample(&self) -> CacheSample {
        ResultCache::sample(self)
    }
}
