//! The partition dictionary: which partitioned tables exist, and for each,
//! which partition holds each partition value, on which backend.
//!
//! A [`Dictionary`] is an immutable snapshot with a version; admin commands
//! build a changed copy and swap it in. Lookups never fail for a value the
//! hashing function accepts: a value with no entry goes to the table's
//! default partition.

use std::collections::{BTreeMap, HashMap};

use crate::key_compare::KeyCompare;
use crate::{BackendId, HashingFunction};

mod cache_rule;
mod enum_key;
mod key_target;
mod names;

pub use cache_rule::CacheRule;
pub use enum_key::EnumKey;
pub use names::{auto_partition_name, generation_name, renamed_default};

/// `db.table`, as the application names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName {
    pub db: String,
    pub table: String,
}

impl TableName {
    pub fn new(db: &str, table: &str) -> TableName {
        TableName {
            db: db.to_string(),
            table: table.to_string(),
        }
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.db, self.table)
    }
}

/// One partition: a physical table on a backend. A new partition's table
/// is `T_<name>`; a partition moved to another backend gets a new name
/// (names are never reused, so a proxy holding an older dictionary can
/// never reach a table that is no longer the partition's home).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub name: String,
    pub backend: BackendId,
    pub physical: String,
}

impl Partition {
    /// The partition's physical table (`_table` is the logical table's
    /// name, kept for callers of the older derived form).
    pub fn physical_table(&self, _table: &str) -> String {
        self.physical.clone()
    }
}

/// A partitioned table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionedTable {
    pub name: TableName,
    pub column: String,
    pub function: HashingFunction,
    pub default_table: String,
    pub default_backend: BackendId,
    /// Partitions by name.
    pub partitions: BTreeMap<String, Partition>,
    /// Partition value to partition name.
    pub values: BTreeMap<String, String>,
    /// The key compares exactly with what the hashing function sees:
    /// statements may be pruned to the partitions of their key values. For
    /// other keys (strings under a collation, where 'Books' = 'books ', ...)
    /// every partition is read, which is always correct.
    pub is_key_exact: bool,
    /// The key column is an integer: literals are compared as numbers.
    pub is_key_integer: bool,
    /// The values an integer key column holds (`None`: not known, or not
    /// an integer): a write of a number outside it stores another value
    /// (the nearest end without strict mode), which routing asks the
    /// backend for (`conversions.rs`).
    pub key_range: Option<(i128, i128)>,
    /// The key column is an ENUM: values are stored as one of its members,
    /// so a key is routed by the member it names.
    pub key_enum: Option<EnumKey>,
    /// Auto-partitioning: a write of a partition value without a partition
    /// makes the proxy create one, on a backend this rule picks.
    pub auto: Option<Placement>,
    /// The AUTO_INCREMENT column, served by the table's sequence
    /// (`hscale.sequences`): the proxy fills its ids in before routing.
    pub auto_column: Option<String>,
    /// The sequence's generation (the operation that set the table up):
    /// blocks a proxy reserved for an older table of the same name are
    /// never used for this one.
    pub sequence_generation: u64,
    /// How the key column compares (`key_compare.rs`): keys are normalised
    /// before the hashing function applies. `None`: raw values (tables set
    /// up before hscale knew, and keys that need nothing).
    pub key_compare: Option<KeyCompare>,
    /// The global unique indexes of the table (`docs/src/unique-keys.md`):
    /// a UNIQUE key of one column without the partition key, enforced by
    /// a lookup table. Empty for nearly every table: the planner looks no
    /// further when it is.
    pub lookups: Vec<Lookup>,
}

/// A global unique index: the UNIQUE key `key` on `column` of a table, kept
/// in the lookup table `table` (`hscale_lookup_<table>_<key>`), itself a
/// partitioned table of the dictionary, partitioned by `column`, whose
/// rows are `(column, partition key)`: one row per row of the table whose
/// `column` is not NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The key's name, as a duplicate's error names it (1062).
    pub key: String,
    pub column: String,
    pub table: TableName,
}

impl Lookup {
    /// The lookup table of `key` of `name`.
    pub fn table_name(name: &TableName, key: &str) -> TableName {
        TableName::new(&name.db, &format!("hscale_lookup_{}_{}", name.table, key))
    }
}

/// Where auto-partitioning puts a new partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The backends in turn: the next after the table's partition count
    /// (the same on every proxy holding the same dictionary).
    RoundRobin,
    /// The backend holding the fewest rows of the table.
    FewestRows,
}

impl Placement {
    /// `ROUND_ROBIN` or `FEWEST_ROWS`, in any case.
    pub fn parse(s: &str) -> Option<Placement> {
        match s.trim().to_ascii_uppercase().as_str() {
            "ROUND_ROBIN" => Some(Placement::RoundRobin),
            "FEWEST_ROWS" => Some(Placement::FewestRows),
            _ => None,
        }
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Placement::RoundRobin => "ROUND_ROBIN",
            Placement::FewestRows => "FEWEST_ROWS",
        })
    }
}

/// Where a row or statement goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    pub backend: BackendId,
    pub physical_table: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DictError {
    #[error(transparent)]
    Weight(crate::HashError),
    #[error("table {0} is already set up as a partitioned table")]
    AlreadySetUp(TableName),
    #[error("table {0} is not a partitioned table")]
    NotPartitioned(TableName),
    #[error("table {table} has no partition {partition:?}")]
    UnknownPartition { table: TableName, partition: String },
    #[error("value {value:?} is already mapped to partition {partition:?} of {table}")]
    ValueMapped {
        table: TableName,
        value: String,
        partition: String,
    },
    #[error(
        "partition {partition:?} of {table} is on backend #{}, not #{}",
        existing.number(),
        requested.number()
    )]
    PartitionElsewhere {
        table: TableName,
        partition: String,
        existing: BackendId,
        requested: BackendId,
    },
    #[error("{function} can never produce the partition value {value:?}: {why}")]
    ImpossibleValue {
        function: String,
        value: String,
        why: String,
    },
    #[error("partition name {0:?} must be letters, digits and underscores")]
    BadName(String),
}

/// A snapshot of all partitioned tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dictionary {
    pub version: u64,
    /// The version stored with the dictionary on the main backend, raised
    /// by compare-and-set with every change (0 before the first).
    pub stored_version: u64,
    tables: HashMap<TableName, PartitionedTable>,
    /// Global tables: a full copy on every backend.
    globals: std::collections::BTreeSet<TableName>,
    /// Some table has auto-partitioning: only then does an INSERT look for
    /// values without a partition (`is_auto_default`, on the statement path).
    has_auto: bool,
    /// Some table has a sequence: only then does an INSERT look for ids to
    /// fill in (`router::sequence`, on the statement path).
    has_sequences: bool,
    /// Some table's key is weighed by the backend (`key_compare::Weighed`):
    /// only then does the proxy look for keys without a weight after
    /// routing (`weights.rs`).
    has_weighed_keys: bool,
    /// Views hscale keeps (`crate::view`): those that read partitioned or
    /// global tables.
    views: std::collections::BTreeMap<TableName, crate::view::View>,
    /// Tables whose reads the result cache keeps (`HSCALE CACHE_TABLE`,
    /// `hscale.cached_tables`): any table, partitioned or not.
    cached: std::collections::BTreeMap<TableName, CacheRule>,
    /// Statements whose reads the result cache keeps, whatever rules
    /// their tables have (`HSCALE CACHE_STATEMENT`,
    /// `hscale.cached_statements`): by fingerprint hash, with the
    /// statement given and its rule.
    cached_statements: std::collections::BTreeMap<u64, (String, CacheRule)>,
}

impl Dictionary {
    pub fn view(&self, name: &TableName) -> Option<&crate::view::View> {
        self.views.get(name)
    }

    pub fn views(&self) -> impl Iterator<Item = &crate::view::View> {
        self.views.values()
    }

    /// Whether hscale keeps any view: only then does the planner look for
    /// view names in a statement.
    pub fn has_views(&self) -> bool {
        !self.views.is_empty()
    }

    /// Add or replace a view.
    pub fn put_view(&mut self, view: crate::view::View) {
        self.views.insert(view.name.clone(), view);
        self.version += 1;
    }

    pub fn remove_view(&mut self, name: &TableName) -> bool {
        let removed = self.views.remove(name).is_some();
        if removed {
            self.version += 1;
        }
        removed
    }

    pub fn table(&self, name: &TableName) -> Option<&PartitionedTable> {
        self.tables.get(name)
    }

    pub fn tables(&self) -> impl Iterator<Item = &PartitionedTable> {
        self.tables.values()
    }

    /// The partitioned table whose default or partition table is
    /// `physical` in database `db`.
    pub fn table_of_physical(&self, db: &str, physical: &str) -> Option<&TableName> {
        self.tables
            .values()
            .find(|t| {
                t.name.db == db
                    && (t.default_table == physical
                        || t.partitions.values().any(|p| p.physical == physical))
            })
            .map(|t| &t.name)
    }

    /// A server's error message for a partition's statement, as one server
    /// holding the logical table words it: every `` `db`.`physical` `` of
    /// a partitioned table (a default or partition table) becomes
    /// `` `db`.`table` `` (1366 names its column so, 1452 its foreign key,
    /// 4025 its CHECK constraint), and every `'physical'` becomes
    /// `'table'` (1906 names a generated column's table so), and every
    /// `'db.physical'` becomes `'db.table'` (1146 names a missing table
    /// so). `None`: nothing to change.
    pub fn user_message(&self, message: &str) -> Option<String> {
        let is_qualified = message.contains("`.`");
        if !is_qualified && !message.contains('\'') {
            return None;
        }
        let mut out = None::<String>;
        for t in self.tables.values() {
            let db = t.name.db.replace('`', "``");
            let logical = format!("`{db}`.`{}`", t.name.table.replace('`', "``"));
            let quoted = format!("'{}'", t.name.table);
            let dotted = format!("'{}.{}'", t.name.db, t.name.table);
            let physical = std::iter::once(t.default_table.as_str())
                .chain(t.partitions.values().map(|p| p.physical.as_str()));
            for phys in physical {
                let current = out.as_deref().unwrap_or(message);
                let named = format!("`{db}`.`{}`", phys.replace('`', "``"));
                if is_qualified && current.contains(&named) {
                    out = Some(current.replace(&named, &logical));
                }
                let current = out.as_deref().unwrap_or(message);
                let named = format!("'{phys}'");
                if current.contains(&named) {
                    out = Some(current.replace(&named, &quoted));
                }
                let current = out.as_deref().unwrap_or(message);
                let named = format!("'{}.{phys}'", t.name.db);
                if current.contains(&named) {
                    out = Some(current.replace(&named, &dotted));
                }
            }
        }
        out
    }

    /// No partitioned table, global table or view: every statement passes
    /// through.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.globals.is_empty() && self.views.is_empty()
    }

    /// Turn auto-partitioning of `name` on (`Some`) or off.
    pub fn set_auto(&mut self, name: &TableName, auto: Option<Placement>) -> Result<(), DictError> {
        let t = self
            .tables
            .get_mut(name)
            .ok_or_else(|| DictError::NotPartitioned(name.clone()))?;
        t.auto = auto;
        self.has_auto = self.tables.values().any(|t| t.auto.is_some());
        self.version += 1;
        Ok(())
    }

    /// Whether `target` is the default partition of a table with
    /// auto-partitioning: a write there may name a value that needs a
    /// partition (`router::unplaced_values`).
    pub fn is_auto_default(&self, target: &Target) -> bool {
        self.has_auto
            && self.tables.values().any(|t| {
                t.auto.is_some()
                    && t.default_backend == target.backend
                    && t.default_table == target.physical_table
            })
    }

    /// Whether some partition (or default partition) of a table in `db` is
    /// physical table `table`: the fence waits for a dictionary that no
    /// longer names a table the backend says is gone.
    pub fn names_physical(&self, db: &str, table: &str) -> bool {
        self.tables.values().any(|t| {
            t.name.db == db
                && (t.default_table == table || t.partitions.values().any(|p| p.physical == table))
        })
    }

    pub fn is_global(&self, name: &TableName) -> bool {
        self.globals.contains(name)
    }

    pub fn globals(&self) -> impl Iterator<Item = &TableName> {
        self.globals.iter()
    }

    pub fn add_global(&mut self, name: TableName) -> Result<(), DictError> {
        if self.tables.contains_key(&name) || self.globals.contains(&name) {
            return Err(DictError::AlreadySetUp(name));
        }
        self.globals.insert(name);
        self.version += 1;
        Ok(())
    }

    pub fn remove_global(&mut self, name: &TableName) -> bool {
        let removed = self.globals.remove(name);
        if removed {
            self.version += 1;
        }
        removed
    }

    pub fn setup_table(
        &mut self,
        name: TableName,
        column: &str,
        default_table: &str,
        default_backend: BackendId,
        function: HashingFunction,
    ) -> Result<(), DictError> {
        if self.tables.contains_key(&name) || self.globals.contains(&name) {
            return Err(DictError::AlreadySetUp(name));
        }
        self.tables.insert(
            name.clone(),
            PartitionedTable {
                name,
                column: column.to_string(),
                function,
                default_table: default_table.to_string(),
                default_backend,
                partitions: BTreeMap::new(),
                values: BTreeMap::new(),
                is_key_exact: false,
                is_key_integer: false,
                key_range: None,
                key_enum: None,
                auto: None,
                auto_column: None,
                sequence_generation: 0,
                key_compare: None,
                lookups: Vec::new(),
            },
        );
        self.version += 1;
        Ok(())
    }

    /// Rename a table: its partitions follow (`U_p`), and so does a default
    /// table named `T_...`. Returns the renamed table.
    pub fn rename_table(
        &mut self,
        from: &TableName,
        to: &TableName,
    ) -> Result<PartitionedTable, DictError> {
        if self.tables.contains_key(to) {
            return Err(DictError::AlreadySetUp(to.clone()));
        }
        let mut t = self
            .tables
            .remove(from)
            .ok_or_else(|| DictError::NotPartitioned(from.clone()))?;
        t.default_table = renamed_default(&t.default_table, &from.table, &to.table);
        for p in t.partitions.values_mut() {
            p.physical = renamed_default(&p.physical, &from.table, &to.table);
        }
        t.name = to.clone();
        self.tables.insert(to.clone(), t.clone());
        self.version += 1;
        Ok(t)
    }

    /// The same tables, partitions and values (versions aside).
    pub fn same_tables(&self, other: &Dictionary) -> bool {
        self.stored_version == other.stored_version
            && self.tables == other.tables
            && self.globals == other.globals
            && self.views == other.views
            && self.cached == other.cached
            && self.cached_statements == other.cached_statements
    }

    pub fn remove_table(&mut self, name: &TableName) -> Option<PartitionedTable> {
        let t = self.tables.remove(name);
        if t.is_some() {
            self.version += 1;
        }
        t
    }

    /// Set the global unique indexes of `name` (`Lookup`).
    pub fn set_lookups(&mut self, name: &TableName, lookups: Vec<Lookup>) {
        if let Some(t) = self.tables.get_mut(name) {
            t.lookups = lookups;
            self.version += 1;
        }
    }

    /// The table whose global unique index `name` is the lookup table of.
    pub fn lookup_owner(&self, name: &TableName) -> Option<&PartitionedTable> {
        self.tables
            .values()
            .find(|t| t.lookups.iter().any(|l| l.table == *name))
    }

    /// The AUTO_INCREMENT column served by `name`'s sequence (`None`: the
    /// table has none).
    pub fn set_auto_column(&mut self, name: &TableName, column: Option<&str>, generation: u64) {
        if let Some(t) = self.tables.get_mut(name) {
            t.auto_column = column.map(str::to_string);
            t.sequence_generation = generation;
        }
        self.has_sequences = self.tables.values().any(|t| t.auto_column.is_some());
    }

    /// Whether some table's ids come from a sequence: only then does an
    /// INSERT need a look for ids to fill in.
    /// Whether any table is global.
    pub fn has_globals(&self) -> bool {
        !self.globals.is_empty()
    }

    pub fn has_sequences(&self) -> bool {
        self.has_sequences
    }

    /// Whether some table's key is weighed by the backend.
    pub fn has_weighed_keys(&self) -> bool {
        self.has_weighed_keys
    }

    pub fn set_key_exact(&mut self, name: &TableName, is_exact: bool) {
        if let Some(t) = self.tables.get_mut(name) {
            t.is_key_exact = is_exact;
            t.is_key_integer = is_exact;
        }
    }

    /// Record the key column's SQL type (`information_schema.COLUMNS`
    /// COLUMN_TYPE, then ` COLLATE name` for strings; a bare DATA_TYPE is
    /// read too) and derive whether statements on it may be pruned.
    pub fn set_key_type(&mut self, name: &TableName, key_type: &str) {
        if let Some(t) = self.tables.get_mut(name) {
            let ty: String = key_type
                .chars()
                .take_while(|c| c.is_ascii_alphabetic())
                .collect::<String>()
                .to_ascii_lowercase();
            t.key_enum = EnumKey::parse(key_type);
            t.is_key_integer = matches!(
                ty.as_str(),
                "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint"
            );
            let bits = match ty.as_str() {
                "tinyint" => 8,
                "smallint" => 16,
                "mediumint" => 24,
                "int" | "integer" => 32,
                "bigint" => 64,
                _ => 0,
            };
            let is_unsigned = key_type.to_ascii_lowercase().contains("unsigned");
            t.key_range = (bits > 0).then(|| {
                if is_unsigned {
                    (0, (1i128 << bits) - 1)
                } else {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                }
            });
            // Not TIMESTAMP: its text depends on the session's time zone.
            let is_date = matches!(ty.as_str(), "date" | "datetime");
            t.is_key_exact = t.is_key_integer
                || t.key_enum.is_some()
                || (is_date && matches!(t.function, HashingFunction::Date(_)));
        }
    }

    /// How the key column compares (`None`: raw values, as before).
    pub fn set_key_compare(&mut self, name: &TableName, compare: Option<KeyCompare>) {
        if let Some(t) = self.tables.get_mut(name) {
            t.key_compare = compare;
        }
        self.has_weighed_keys = self
            .tables
            .values()
            .any(|t| matches!(t.key_compare, Some(KeyCompare::Weighed(_))));
    }

    /// Map `value` to `partition` (created on `backend` if new). Returns
    /// whether the partition is new.
    pub fn add_partition(
        &mut self,
        name: &TableName,
        partition: &str,
        value: &str,
        backend: BackendId,
    ) -> Result<bool, DictError> {
        if partition.is_empty()
            || !partition
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(DictError::BadName(partition.to_string()));
        }
        let t = self
            .tables
            .get_mut(name)
            .ok_or_else(|| DictError::NotPartitioned(name.clone()))?;
        t.function
            .can_produce(value)
            .map_err(|why| DictError::ImpossibleValue {
                function: t.function.to_string(),
                value: value.to_string(),
                why,
            })?;
        if let Some(existing) = t.values.get(value) {
            return Err(DictError::ValueMapped {
                table: name.clone(),
                value: value.to_string(),
                partition: existing.clone(),
            });
        }
        let is_new = match t.partitions.get(partition) {
            Some(p) if p.backend != backend => {
                return Err(DictError::PartitionElsewhere {
                    table: name.clone(),
                    partition: partition.to_string(),
                    existing: p.backend,
                    requested: backend,
                })
            }
            Some(_) => false,
            None => {
                let physical = format!("{}_{partition}", name.table);
                t.partitions.insert(
                    partition.to_string(),
                    Partition {
                        name: partition.to_string(),
                        backend,
                        physical,
                    },
                );
                true
            }
        };
        t.values.insert(value.to_string(), partition.to_string());
        self.version += 1;
        Ok(is_new)
    }

    /// Give a partition another home: a physical table on a backend.
    pub fn move_partition(
        &mut self,
        name: &TableName,
        partition: &str,
        backend: BackendId,
        physical: &str,
    ) -> Result<(), DictError> {
        let t = self
            .tables
            .get_mut(name)
            .ok_or_else(|| DictError::NotPartitioned(name.clone()))?;
        let p = t
            .partitions
            .get_mut(partition)
            .ok_or_else(|| DictError::UnknownPartition {
                table: name.clone(),
                partition: partition.to_string(),
            })?;
        p.backend = backend;
        p.physical = physical.to_string();
        self.version += 1;
        Ok(())
    }

    /// Give the default partition another physical table (a new
    /// generation after it lost keys).
    pub fn set_default_table(&mut self, name: &TableName, physical: &str) -> Result<(), DictError> {
        let t = self
            .tables
            .get_mut(name)
            .ok_or_else(|| DictError::NotPartitioned(name.clone()))?;
        t.default_table = physical.to_string();
        self.version += 1;
        Ok(())
    }

    /// Remove a partition and its values; returns it.
    pub fn drop_partition(
        &mut self,
        name: &TableName,
        partition: &str,
    ) -> Result<Partition, DictError> {
        let t = self
            .tables
            .get_mut(name)
            .ok_or_else(|| DictError::NotPartitioned(name.clone()))?;
        let p = t
            .partitions
            .remove(partition)
            .ok_or_else(|| DictError::UnknownPartition {
                table: name.clone(),
                partition: partition.to_string(),
            })?;
        t.values.retain(|_, v| v != partition);
        self.version += 1;
        Ok(p)
    }
}

#[cfg(test)]
mod tests;
