//! Test fixtures for the merge operators: column definitions, rows and
//! group plans as the fragments and the planner produce them.

use hscale_route::dictionary::Target;
use hscale_route::router::{GroupPlan, Having, Output, Val};
use hscale_route::BackendId;
use hscale_wire::resultset::ColumnInfo;

use super::Row;

pub const NEWDECIMAL: u8 = 0xf6;
pub const LONGLONG: u8 = 0x08;
pub const VAR_STRING: u8 = 0xfd;
/// utf8mb4_general_ci (PAD SPACE) and utf8mb4_general_nopad_ci.
pub const UTF8MB4_GENERAL_CI: u16 = 45;
pub const UTF8MB4_GENERAL_NOPAD_CI: u16 = 1069;
pub const BINARY: u16 = 63;

pub fn col(column_type: u8, charset: u16, decimals: u8) -> ColumnInfo {
    ColumnInfo {
        name: "c".into(),
        charset,
        column_type,
        length: 20,
        flags: 0,
        decimals,
    }
}

/// A DECIMAL column with `decimals` digits after the point.
pub fn dec(decimals: u8) -> ColumnInfo {
    col(NEWDECIMAL, BINARY, decimals)
}

/// A BIGINT column.
pub fn int() -> ColumnInfo {
    col(LONGLONG, BINARY, 0)
}

pub fn row(cells: &[Option<&[u8]>]) -> Row {
    cells.iter().map(|c| c.map(<[u8]>::to_vec)).collect()
}

pub fn text(cells: &[Option<&str>]) -> Row {
    cells
        .iter()
        .map(|c| c.map(|s| s.as_bytes().to_vec()))
        .collect()
}

pub fn plan(keys: Vec<Val>, outputs: Vec<Output>, having: Option<Having>) -> GroupPlan {
    GroupPlan {
        keys,
        visible: outputs.len(),
        outputs,
        having,
        separators: vec![",".into(), "--".into()],
        meta: (
            Target {
                backend: BackendId::MAIN,
                physical_table: "t_0".into(),
            },
            String::new(),
        ),
        enum_probe: None,
        groups_by_alias: false,
    }
}

/// A string value (column 0) with its weight and space-weight columns
/// (`Val`), then a partial COUNT (column 3): 'a', 'a ' and 'A' with the
/// weights MariaDB gives them under utf8mb4_general_ci
/// (`WEIGHT_STRING`: 0x0041, 0x00410020, 0x0041; a space: 0x0020).
pub fn strings(pad_space: bool) -> (Val, Vec<ColumnInfo>, Vec<Row>) {
    let val = Val {
        col: 0,
        weight: Some((1, 2)),
    };
    let charset = if pad_space {
        UTF8MB4_GENERAL_CI
    } else {
        UTF8MB4_GENERAL_NOPAD_CI
    };
    let cols = vec![
        col(VAR_STRING, charset, 0),
        col(VAR_STRING, BINARY, 0),
        col(VAR_STRING, BINARY, 0),
        int(),
    ];
    let sp: &[u8] = &[0x00, 0x20];
    let rows = vec![
        row(&[Some(b"a"), Some(&[0x00, 0x41]), Some(sp), Some(b"1")]),
        row(&[
            Some(b"a "),
            Some(&[0x00, 0x41, 0x00, 0x20]),
            Some(sp),
            Some(b"1"),
        ]),
        row(&[Some(b"A"), Some(&[0x00, 0x41]), Some(sp), Some(b"1")]),
    ];
    (val, cols, rows)
}
