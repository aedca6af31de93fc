//! The names hscale gives tables it makes: a generation of a partition's
//! table, an auto-partition, a default table after a rename.

/// `base` with a generation suffix: `t_p` → `t_p_g7`, `t_p_g3` → `t_p_g7`.
/// Generations come from the stored dictionary version, which only grows,
/// so a name made this way is never used twice.
pub fn generation_name(base: &str, generation: u64) -> String {
    let stem = match base.rfind("_g") {
        Some(i) if i + 2 < base.len() && base[i + 2..].bytes().all(|b| b.is_ascii_digit()) => {
            &base[..i]
        }
        _ => base,
    };
    format!("{stem}_g{generation}")
}

/// The partition name auto-partitioning gives `value`: `auto_` and the
/// value's letters, digits and underscores, with a hash of the value when
/// anything else was dropped or it is long (the same on every proxy).
pub fn auto_partition_name(value: &str) -> String {
    let clean: String = value
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(24)
        .collect();
    if clean == value {
        return format!("auto_{clean}");
    }
    let mut h: u32 = 0x811c_9dc5;
    for b in value.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("auto_{clean}_{h:08x}")
}

/// The default table's name after renaming `from` to `to`: `from_x`
/// becomes `to_x`; any other name stays.
pub fn renamed_default(default_table: &str, from: &str, to: &str) -> String {
    match default_table.strip_prefix(&format!("{from}_")) {
        Some(rest) => format!("{to}_{rest}"),
        None => default_table.to_string(),
    }
}
