//! The proxy's own code on 2 MB pages (the speed issue).
//!
//! The statement path runs through a few hundred functions spread over a
//! 10 MB text; with 4 KB pages each statement needs far more instruction
//! TLB entries than a core keeps, and on a machine shared with the
//! servers and the clients (or a VM, where a TLB miss walks two page
//! tables) much of a statement's user time is spent refilling them.
//! Linux backs executable files with small pages unless the kernel is
//! built with `CONFIG_READ_ONLY_THP_FOR_FS`, so at start-up, before any
//! other thread exists, [`remap`] copies the 2 MB-aligned middle of the
//! text into anonymous memory backed by transparent huge pages and moves
//! it over the original with one `mremap`: the same bytes at the same
//! addresses, so the code running it (and every return address) stays
//! valid. It needs transparent huge pages `always` or `madvise`; where
//! they are off or memory is short, the pages are small and nothing else
//! changes.
//!
//! `HSCALE_HUGE_TEXT=0` keeps the file's mapping: profilers that name
//! functions from `/proc/<pid>/maps` (perf) cannot name code on anonymous
//! pages (`bench/profile.sh` sets it).

const HUGE: usize = 2 << 20;

/// What [`remap`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remapped {
    /// Bytes of text moved onto anonymous memory.
    pub bytes: usize,
    /// Of which backed by huge pages (`AnonHugePages`).
    pub huge_bytes: usize,
}

/// Move the 2 MB-aligned part of this executable's text onto huge pages.
/// Call it first thing in `main`, while the process has one thread.
#[allow(unsafe_code)]
pub fn remap() -> Result<Remapped, String> {
    if std::env::var("HSCALE_HUGE_TEXT").is_ok_and(|v| v == "0") {
        return Ok(Remapped {
            bytes: 0,
            huge_bytes: 0,
        });
    }
    let (start, end) = text_range()?;
    let from = (start + HUGE - 1) & !(HUGE - 1);
    let to = end & !(HUGE - 1);
    if to <= from {
        return Ok(Remapped {
            bytes: 0,
            huge_bytes: 0,
        });
    }
    let len = to - from;
    // SAFETY: the new mapping is private to this function until the
    // mremap; the mremap replaces [from, to) with pages holding the very
    // bytes it held (copied from it), executable, in one step under the
    // process's mmap lock, so any code running there (this function's
    // own included) reads the same instructions before and after.
    unsafe {
        let raw = libc::mmap(
            std::ptr::null_mut(),
            len + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if raw == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        let raw = raw as usize;
        let aligned = (raw + HUGE - 1) & !(HUGE - 1);
        if aligned > raw {
            libc::munmap(raw as *mut libc::c_void, aligned - raw);
        }
        let slack_end = raw + len + HUGE;
        if slack_end > aligned + len {
            libc::munmap(
                (aligned + len) as *mut libc::c_void,
                slack_end - aligned - len,
            );
        }
        let new = aligned as *mut libc::c_void;
        libc::madvise(new, len, libc::MADV_HUGEPAGE);
        std::ptr::copy_nonoverlapping(from as *const u8, aligned as *mut u8, len);
        if libc::mprotect(new, len, libc::PROT_READ | libc::PROT_EXEC) != 0 {
            let e = std::io::Error::last_os_error();
            libc::munmap(new, len);
            return Err(format!("mprotect: {e}"));
        }
        let moved = libc::mremap(
            new,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            from as *mut libc::c_void,
        );
        if moved == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            libc::munmap(new, len);
            return Err(format!("mremap: {e}"));
        }
    }
    Ok(Remapped {
        bytes: len,
        huge_bytes: huge_bytes_at(from).unwrap_or(0),
    })
}

/// The executable mapping of this program's own file.
fn text_range() -> Result<(usize, usize), String> {
    let exe = std::fs::read_link("/proc/self/exe").map_err(|e| format!("/proc/self/exe: {e}"))?;
    let maps =
        std::fs::read_to_string("/proc/self/maps").map_err(|e| format!("/proc/self/maps: {e}"))?;
    let exe = exe.to_string_lossy();
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let path = fields.nth(3).unwrap_or("");
        if perms != "r-xp" || path != exe {
            continue;
        }
        let (a, b) = range.split_once('-').ok_or("bad maps line")?;
        let a = usize::from_str_radix(a, 16).map_err(|e| e.to_string())?;
        let b = usize::from_str_radix(b, 16).map_err(|e| e.to_string())?;
        return Ok((a, b));
    }
    Err("no executable mapping of the program's file".into())
}

/// `AnonHugePages` of the mapping starting at `start`, in bytes.
fn huge_bytes_at(start: usize) -> Option<usize> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let head = format!("{start:x}-");
    let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
    lines.next()?;
    for l in lines {
        if let Some(kb) = l.strip_prefix("AnonHugePages:") {
            return kb
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .ok()
                .map(|k| k * 1024);
        }
        if l.contains('-') && !l.contains(':') {
            break;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    /// The remap itself runs in the binary only (it must happen while the
    /// process has one thread, which a test harness is not):
    /// `tests/cli.rs` checks a served proxy's text is on huge pages.
    #[test]
    fn the_text_range_is_found() {
        let (a, b) = super::text_range().unwrap();
        let here = the_text_range_is_found as *const () as usize;
        assert!(a <= here && here < b, "{a:x}..{b:x} does not hold {here:x}");
    }
}
