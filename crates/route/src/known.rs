//! What one planning knows beyond the dictionary, and what it would ask.
//!
//! Routing a key sometimes needs an answer only a backend has: the weight
//! of a string under a collation hscale has no table for (`weights.rs`),
//! or the value a key column makes of a literal (`conversions.rs`). The
//! planner never guesses one: it notes the question in the [`Known`] it
//! was given and plans without the answer (a read then scatters, a write
//! is refused). The proxy's one planning driver (`hscale::planning`)
//! reads the [`Questions`], asks the backends, and plans again with the
//! answers in a new `Known`.
//!
//! ```text
//!  driver ──► Known { worker's weights, this statement's answers }
//!         ──► router::plan(.., &known) ──► Plan
//!         ──► known.questions() ──empty──► run the plan
//!                   └──asked──► backends ──► answers ──► plan again
//! ```
//!
//! Nothing here is global or per thread: a `Known` lives for one planning
//! and is passed down to every place that routes a key.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use crate::conversions::{Ask, Converted};
use crate::dictionary::TableName;
use crate::key_compare::Weighed;
use crate::weights::WeightBook;

/// The backend's conversions of key literals, for one statement: by table
/// and literal, the value the column holds (`None`: NULL).
pub type Answers = HashMap<(TableName, String), Option<String>>;

/// `answers` as an [`Answers`] map.
pub fn answers(converted: &[Converted]) -> Answers {
    converted
        .iter()
        .map(|a| ((a.table.clone(), a.literal.clone()), a.value.clone()))
        .collect()
}

/// What a planning met without an answer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Questions {
    /// Keys without a weight (each once, sorted).
    pub weights: Vec<(Weighed, String)>,
    /// Key literals the backend must convert (each once; at most
    /// `conversions::MAX_MISSES` + 1, so that a caller sees there were
    /// more).
    pub conversions: Vec<Ask>,
}

impl Questions {
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty() && self.conversions.is_empty()
    }
}

#[derive(Default)]
struct Noted {
    weights: Vec<(Weighed, String)>,
    conversions: Vec<Ask>,
    converted: HashSet<(TableName, String)>,
}

/// What one planning knows: the worker's weights and this statement's
/// conversions; the questions it meets are noted here.
pub struct Known<'a> {
    weights: Option<&'a RefCell<WeightBook>>,
    answers: Option<&'a Answers>,
    noted: RefCell<Noted>,
}

impl<'a> Known<'a> {
    /// Knowing `weights` (a worker's book) and `answers` (this
    /// statement's conversions).
    pub fn new(weights: Option<&'a RefCell<WeightBook>>, answers: Option<&'a Answers>) -> Self {
        Known {
            weights,
            answers,
            noted: RefCell::new(Noted::default()),
        }
    }

    /// Knowing nothing: every weight and conversion is a question.
    pub fn nothing() -> Known<'static> {
        Known::new(None, None)
    }

    /// The weight of `value` under `collation`, or `None` with the
    /// question noted.
    pub(crate) fn weight(&self, collation: &Weighed, value: &str) -> Option<String> {
        if let Some(w) = self
            .weights
            .and_then(|b| b.borrow_mut().lookup(collation, value))
        {
            return Some(w);
        }
        let mut n = self.noted.borrow_mut();
        if n.weights.len() < crate::weights::MAX_MISSES {
            n.weights.push((collation.clone(), value.to_string()));
        }
        None
    }

    /// The value the backend said the column makes of `ask`'s literal,
    /// or `None` with the question noted.
    pub(crate) fn converted(&self, ask: Ask) -> Option<Option<String>> {
        let key = (ask.table.clone(), ask.literal.clone());
        if let Some(v) = self.answers.and_then(|a| a.get(&key)) {
            return Some(v.clone());
        }
        let mut n = self.noted.borrow_mut();
        if n.conversions.len() <= crate::conversions::MAX_MISSES && n.converted.insert(key) {
            n.conversions.push(ask);
        }
        None
    }

    /// Whether this planning met a key without a weight.
    pub fn has_weight_questions(&self) -> bool {
        !self.noted.borrow().weights.is_empty()
    }

    /// The questions met so far, forgotten here.
    pub fn questions(&self) -> Questions {
        let mut n = self.noted.borrow_mut();
        let mut weights = std::mem::take(&mut n.weights);
        weights.sort_by(|a, b| (&a.0.name, &a.1).cmp(&(&b.0.name, &b.1)));
        weights.dedup_by(|a, b| a.0.name == b.0.name && a.1 == b.1);
        n.converted.clear();
        Questions {
            weights,
            conversions: std::mem::take(&mut n.conversions),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendId;

    fn ask(literal: &str) -> Ask {
        Ask {
            table: TableName::new("d", "t"),
            physical: "t_default".into(),
            backend: BackendId::MAIN,
            column: "k".into(),
            literal: literal.into(),
            implicit: None,
        }
    }

    fn unicode() -> Weighed {
        Weighed {
            name: "utf8mb4_unicode_ci".into(),
            charset: "utf8mb4".into(),
            pad: Some("0209".into()),
        }
    }

    #[test]
    fn conversions_are_asked_once_and_answered_from_the_statements_answers() {
        let k = Known::nothing();
        assert_eq!(k.converted(ask("'7abc'")), None);
        assert_eq!(k.converted(ask("'7abc'")), None);
        assert_eq!(k.questions().conversions, vec![ask("'7abc'")]);
        assert!(k.questions().is_empty());
        let a = answers(&[Converted {
            table: TableName::new("d", "t"),
            literal: "'7abc'".into(),
            value: Some("7".into()),
        }]);
        let k = Known::new(None, Some(&a));
        assert_eq!(k.converted(ask("'7abc'")), Some(Some("7".into())));
        assert!(k.questions().is_empty());
    }

    #[test]
    fn weights_come_from_the_book_and_misses_are_asked_once() {
        let u = unicode();
        let book = RefCell::new(WeightBook::new());
        let k = Known::new(Some(&book), None);
        assert_eq!(k.weight(&u, "abc"), None);
        assert_eq!(k.weight(&u, "abc"), None);
        assert!(k.has_weight_questions());
        assert_eq!(k.questions().weights.len(), 1);
        book.borrow_mut().insert(&u, "abc".into(), "0E33".into());
        assert_eq!(k.weight(&u, "abc").as_deref(), Some("0E33"));
        assert!(!k.has_weight_questions());
    }
}
