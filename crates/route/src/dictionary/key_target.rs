//! Where a key of a partitioned table goes: its partition value (the
//! hashing function applied to the key as the column compares it), the
//! partition or default table that value names, the key as the column
//! stores it, and ADD_PARTITION's partition values.

use super::{DictError, PartitionedTable, Target};
use crate::known::Known;
use crate::{HashError, HashingFunction, KeyValue};

impl PartitionedTable {
    /// The partition (or the default table) holding `key`.
    pub fn route(&self, key: &KeyValue, known: &Known<'_>) -> Result<Target, HashError> {
        let value = self.partition_value_of(key, known)?;
        Ok(self.target_of_value(value.as_deref()))
    }

    /// The partition value of a key: the hashing function applied to the
    /// key as the column compares it.
    pub fn partition_value_of(
        &self,
        key: &KeyValue,
        known: &Known<'_>,
    ) -> Result<Option<String>, HashError> {
        match &self.key_compare {
            Some(c) => self.function.apply(&c.normalise(key, known)?),
            None => self.function.apply(key),
        }
    }

    /// The target of a partition value (`None`: NULL, the default partition).
    pub fn target_of_value(&self, value: Option<&str>) -> Target {
        match value
            .and_then(|v| self.values.get(v))
            .and_then(|p| self.partitions.get(p))
        {
            Some(p) => Target {
                backend: p.backend,
                physical_table: p.physical_table(&self.name.table),
            },
            None => self.default_target(),
        }
    }

    pub fn default_target(&self) -> Target {
        Target {
            backend: self.default_backend,
            physical_table: self.default_table.clone(),
        }
    }

    /// Whether the key column holds `v` as it is: not an integer outside
    /// the integer column's range (a write of one stores another value).
    pub fn holds(&self, v: &KeyValue) -> bool {
        match (v, self.key_range) {
            (KeyValue::Int(i), Some((lo, hi))) => (lo..=hi).contains(i),
            _ => true,
        }
    }

    /// A key value as the column holds it: integers for integer keys
    /// ('05' is 5), the named member for ENUM keys ('BOOKS' is 'books').
    /// `None` when the value cannot be placed that way.
    pub fn stored_key(&self, v: KeyValue) -> Option<KeyValue> {
        match (v, &self.key_enum) {
            (KeyValue::Null, _) => Some(KeyValue::Null),
            (KeyValue::Str(s), _) if self.is_key_integer => crate::key::trim_server_space(&s)
                .parse::<i128>()
                .ok()
                .map(KeyValue::Int),
            (KeyValue::Str(s), Some(e)) => e.member(&s).map(|m| KeyValue::Str(m.to_string())),
            // A number names an ENUM member by position; leave it alone.
            (KeyValue::Int(_), Some(_)) => None,
            (other, _) => Some(other),
        }
    }

    /// A partition value for ADD_PARTITION: for NONE() on an ENUM key, the
    /// member it names (an error if it names none).
    pub fn partition_value(&self, value: &str, known: &Known<'_>) -> Result<String, DictError> {
        // Integer partition values as routing writes them: '05' is 5.
        let integer = matches!(
            self.function,
            HashingFunction::Mod(_) | HashingFunction::Div(_) | HashingFunction::Hash(_)
        ) || (self.function == HashingFunction::None && self.is_key_integer);
        if integer {
            if let Ok(i) = value.trim().parse::<i128>() {
                return Ok(i.to_string());
            }
        }
        match (&self.function, &self.key_enum) {
            (HashingFunction::None | HashingFunction::Prefix(_), None)
                if self.key_compare.is_some() =>
            {
                let is_prefix = matches!(self.function, HashingFunction::Prefix(_));
                match &self.key_compare {
                    Some(c) => c
                        .partition_value(is_prefix, value, known)
                        .map_err(DictError::Weight),
                    None => Ok(value.to_string()),
                }
            }
            (HashingFunction::None, Some(e)) => {
                e.member(value)
                    .map(str::to_string)
                    .ok_or_else(|| DictError::ImpossibleValue {
                        function: self.function.to_string(),
                        value: value.to_string(),
                        why: format!(
                            "the key is an ENUM without that member ({})",
                            e.members.join(", ")
                        ),
                    })
            }
            _ => Ok(value.to_string()),
        }
    }

    /// Every physical table of this table, the default first.
    pub fn all_targets(&self) -> Vec<Target> {
        let mut out = vec![self.default_target()];
        for p in self.partitions.values() {
            out.push(Target {
                backend: p.backend,
                physical_table: p.physical_table(&self.name.table),
            });
        }
        out
    }
}
