//! Unit tests of the dictionary model.

use super::*;
use crate::KeyValue;

#[test]
fn generation_names_are_new() {
    assert_eq!(generation_name("t_p", 7), "t_p_g7");
    assert_eq!(generation_name("t_p_g3", 7), "t_p_g7");
    assert_eq!(generation_name("t_big_game", 2), "t_big_game_g2");
    assert_eq!(generation_name("t_g", 2), "t_g_g2");
}

fn dict() -> (Dictionary, TableName) {
    let mut d = Dictionary::default();
    let t = TableName::new("app", "small");
    d.setup_table(
        t.clone(),
        "category",
        "small_default",
        BackendId::MAIN,
        HashingFunction::None,
    )
    .unwrap();
    (d, t)
}

#[test]
fn server_messages_name_the_clients_table() {
    let (mut d, t) = dict();
    d.add_partition(&t, "books", "books", BackendId::new(1))
        .unwrap();
    let phys = d.table(&t).unwrap().partitions.values().next().unwrap();
    let phys = phys.physical.clone();
    for (message, want) in [
        (
            format!("Table 'app.{phys}' doesn't exist"),
            Some("Table 'app.small' doesn't exist"),
        ),
        (
            "Table 'app.small_default' doesn't exist".to_string(),
            Some("Table 'app.small' doesn't exist"),
        ),
        (
            format!("Incorrect value for column `app`.`{phys}`.`c`"),
            Some("Incorrect value for column `app`.`small`.`c`"),
        ),
        (
            "Table 'other.small_default' doesn't exist".to_string(),
            None,
        ),
    ] {
        assert_eq!(d.user_message(&message).as_deref(), want, "{message}");
    }
}

#[test]
fn auto_partition_names_are_stable_and_distinct() {
    assert_eq!(auto_partition_name("3"), "auto_3");
    assert_eq!(auto_partition_name("2024_01"), "auto_2024_01");
    let a = auto_partition_name("2024-01");
    let b = auto_partition_name("2024_01");
    assert!(a.starts_with("auto_2024_01_") && a != b, "{a} {b}");
    assert_eq!(a, auto_partition_name("2024-01"));
    assert!(auto_partition_name(&"x".repeat(200)).len() < 40);
    assert_eq!(auto_partition_name("-5"), auto_partition_name("-5"));
    assert_ne!(auto_partition_name("-5"), auto_partition_name("_5"));
}

#[test]
fn values_route_to_partitions_and_the_rest_to_default() {
    let (mut d, t) = dict();
    assert!(d
        .add_partition(&t, "books", "books", BackendId::new(1))
        .unwrap());
    assert!(!d
        .add_partition(&t, "books", "magazines", BackendId::new(1))
        .unwrap());
    let table = d.table(&t).unwrap();
    let go = |v: &str| {
        table
            .route(&KeyValue::Str(v.into()), &crate::known::Known::nothing())
            .unwrap()
    };
    assert_eq!(
        go("books"),
        Target {
            backend: BackendId::new(1),
            physical_table: "small_books".into()
        }
    );
    assert_eq!(
        go("magazines"),
        Target {
            backend: BackendId::new(1),
            physical_table: "small_books".into()
        }
    );
    assert_eq!(
        go("hardware"),
        Target {
            backend: BackendId::new(0),
            physical_table: "small_default".into()
        }
    );
    assert_eq!(
        table
            .route(&KeyValue::Null, &crate::known::Known::nothing())
            .unwrap()
            .physical_table,
        "small_default"
    );
    assert_eq!(table.all_targets().len(), 2);
    assert_eq!(d.version, 3);
}

#[test]
fn inconsistent_changes_are_refused() {
    let (mut d, t) = dict();
    d.add_partition(&t, "b", "books", BackendId::new(1))
        .unwrap();
    let e = d
        .add_partition(&t, "c", "books", BackendId::new(1))
        .unwrap_err();
    assert!(
        e.to_string().contains("already mapped to partition \"b\""),
        "{e}"
    );
    let e = d
        .add_partition(&t, "b", "comics", BackendId::new(2))
        .unwrap_err();
    assert!(e.to_string().contains("is on backend #2, not #3"), "{e}");
    let e = d
        .setup_table(
            t.clone(),
            "x",
            "y",
            BackendId::MAIN,
            HashingFunction::Mod(3),
        )
        .unwrap_err();
    assert!(matches!(e, DictError::AlreadySetUp(_)));
    let e = d
        .add_partition(&TableName::new("app", "nope"), "p", "v", BackendId::new(0))
        .unwrap_err();
    assert!(matches!(e, DictError::NotPartitioned(_)));
    assert!(matches!(
        d.add_partition(&t, "bad-name", "x", BackendId::new(0)),
        Err(DictError::BadName(_))
    ));
    let mut m = Dictionary::default();
    let mt = TableName::new("app", "m");
    m.setup_table(
        mt.clone(),
        "id",
        "m_default",
        BackendId::MAIN,
        HashingFunction::Mod(4),
    )
    .unwrap();
    let e = m
        .add_partition(&mt, "p", "abc", BackendId::new(0))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("MOD(4) can never produce the partition value \"abc\""),
        "{e}"
    );
    assert!(m.add_partition(&mt, "p", "4", BackendId::new(0)).is_err());
    assert!(m.add_partition(&mt, "p", "-3", BackendId::new(0)).is_ok());
    let p = d.drop_partition(&t, "b").unwrap();
    assert_eq!(p.backend, BackendId::new(1));
    assert_eq!(
        d.table(&t)
            .unwrap()
            .route(
                &KeyValue::Str("books".into()),
                &crate::known::Known::nothing()
            )
            .unwrap()
            .backend,
        BackendId::MAIN
    );
    assert!(d.drop_partition(&t, "b").is_err());
}
