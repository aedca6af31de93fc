//! Session state over partitions: SQL_CALC_FOUND_ROWS and FOUND_ROWS(),
//! SET of variables to expressions, CTEs named like partitioned tables,
//! SELECT ... INTO variables.

use super::*;

// ---- 10. SQL_CALC_FOUND_ROWS over several partitions --------------------

/// Issue 29, item 10: the SELECT over several partitions, then
/// FOUND_ROWS().
#[tokio::test]
async fn sql_calc_found_rows_over_several_partitions() {
    let mut h = acct("fr_issue").await;
    h.check("SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags = 3 ORDER BY uid LIMIT 4")
        .await;
    h.check("SELECT FOUND_ROWS()").await;
    h.report("SQL_CALC_FOUND_ROWS", 2);
}

/// The class: OFFSET and `LIMIT m, n`, no ORDER BY, no LIMIT, no row,
/// LIMIT 0, GROUP BY, DISTINCT, aggregates, HAVING, an alias, a key IN
/// list over two partitions, one partition, inside a transaction, and
/// FOUND_ROWS() after the next plain SELECT (its own rows again).
#[tokio::test]
async fn found_rows_after_calc_found_rows_over_partitions() {
    let mut h = acct("fr_class").await;
    for sql in [
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags = 3 ORDER BY uid LIMIT 4 OFFSET 2",
        "SELECT SQL_CALC_FOUND_ROWS uid, handle FROM acct ORDER BY uid DESC LIMIT 3, 5",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags < 2 LIMIT 0",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags > 100 ORDER BY uid LIMIT 3",
        "SELECT SQL_CALC_FOUND_ROWS flags, COUNT(*) FROM acct GROUP BY flags ORDER BY flags LIMIT 2",
        "SELECT SQL_CALC_FOUND_ROWS DISTINCT handle FROM acct ORDER BY handle LIMIT 3",
        "SELECT SQL_CALC_FOUND_ROWS COUNT(*), SUM(balance) FROM acct WHERE flags = 1",
        "SELECT SQL_CALC_FOUND_ROWS flags, COUNT(*) AS n FROM acct GROUP BY flags HAVING n > 7 ORDER BY flags LIMIT 1",
        "SELECT SQL_CALC_FOUND_ROWS a.uid AS u FROM acct AS a WHERE a.balance > 0 ORDER BY u LIMIT 5",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE uid IN (1001, 1002, 1005, 1006) ORDER BY uid LIMIT 1",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE uid = 1004 LIMIT 1",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct ORDER BY balance, uid LIMIT 6",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE handle LIKE 'h1%' ORDER BY uid LIMIT 2",
    ] {
        h.check(sql).await;
        h.check("SELECT FOUND_ROWS()").await;
    }
    for sql in [
        "BEGIN",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags = 4 ORDER BY uid LIMIT 2",
        "SELECT FOUND_ROWS()",
        "COMMIT",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct ORDER BY uid LIMIT 1",
        "SELECT uid FROM acct WHERE flags = 0 ORDER BY uid",
        "SELECT FOUND_ROWS()",
        "SELECT SQL_CALC_FOUND_ROWS nope FROM acct LIMIT 1",
        "SELECT FOUND_ROWS()",
    ] {
        h.check(sql).await;
    }
    h.report("SQL_CALC_FOUND_ROWS", 35);
}

// ---- SET of session variables to expressions ----------------------------

/// Issue 29 ("Refused, but one server answers"): `SET sql_mode =
/// CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')` no longer pins the session:
/// statements over several partitions after it run, under the new mode.
#[tokio::test]
async fn set_sql_mode_to_an_expression_keeps_the_session_unpinned() {
    let mut h = acct("sv_issue").await;
    for sql in [
        "SET sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')",
        "SELECT @@sql_mode",
        "SELECT COUNT(*) FROM acct",
        "SELECT uid, handle || '-' || flags AS hf FROM acct WHERE flags = 2 ORDER BY uid",
    ] {
        h.check(sql).await;
    }
    h.report("SET to an expression", 4);
}

/// The class: other variables and expressions (arithmetic, IF, REPLACE,
/// a variable's own value, system variables, several assignments, SESSION
/// and @@session forms, a subquery over a partitioned table), each
/// followed by reads over several partitions and a write; an expression
/// the server refuses answers its own error.
#[tokio::test]
async fn set_session_variables_to_expressions() {
    let mut h = acct("sv_class").await;
    for sql in [
        "SET sql_mode = REPLACE(@@sql_mode, 'STRICT_TRANS_TABLES', '')",
        "SELECT @@sql_mode",
        "SET SESSION div_precision_increment = 2 + 3",
        "SELECT @@div_precision_increment",
        "SELECT SUM(balance) / 7 FROM acct",
        "SET @@session.group_concat_max_len = IF(1 > 0, 64, 128), max_join_size = 1000 * 1000",
        "SELECT @@group_concat_max_len, @@max_join_size",
        "SELECT GROUP_CONCAT(uid ORDER BY uid) FROM acct WHERE flags = 4",
        "SET sql_mode = CONCAT_WS(',', @@sql_mode, 'ANSI_QUOTES')",
        "SELECT \"uid\" FROM \"acct\" WHERE \"uid\" = 1007",
        "SET sql_mode = DEFAULT",
        "SET sql_select_limit = (SELECT COUNT(*) FROM acct WHERE flags = 1) - 5",
        "SELECT @@sql_select_limit",
        "SELECT uid FROM acct ORDER BY uid",
        "SET sql_select_limit = DEFAULT",
        "SET sql_mode = CONCAT(@@sql_mode, ',NO_SUCH_MODE')",
        "SET lock_wait_timeout = LEAST(@@lock_wait_timeout, 40)",
        "SELECT @@lock_wait_timeout",
        "SET sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT'), @@session.auto_increment_increment = 1 + 1",
        "SELECT @@auto_increment_increment, 'a' || 'b'",
    ] {
        h.check(sql).await;
    }
    h.check_write("UPDATE acct SET handle = handle || '+' WHERE flags = 1")
        .await;
    h.check_any_order("SELECT uid, handle FROM acct WHERE flags IN (1, 2)")
        .await;
    h.report("SET to an expression", 22);
}

// ---- A common table expression named like a partitioned table ----------

/// Issue 29 ("Refused, but one server answers"): a CTE named like the
/// partitioned table hides it in the statement.
#[tokio::test]
async fn a_cte_named_like_a_partitioned_table() {
    let mut h = acct("cte_issue").await;
    h.check("WITH acct AS (SELECT 1 AS uid) SELECT * FROM acct")
        .await;
    h.report("CTE named like a table", 1);
}

/// The class: the CTE reading the table it hides, several CTEs (an
/// earlier one reading the table), RECURSIVE, aggregates, joins with the
/// CTE, subqueries and UNION ALL naming it, a CTE of another name.
#[tokio::test]
async fn ctes_that_hide_partitioned_tables() {
    let mut h = acct("cte_class").await;
    for sql in [
        "WITH acct AS (SELECT uid FROM acct WHERE flags = 1) SELECT COUNT(*) FROM acct",
        "WITH acct AS (SELECT uid, flags FROM acct) SELECT flags, COUNT(*) FROM acct GROUP BY flags ORDER BY flags",
        "WITH a AS (SELECT uid FROM acct WHERE flags = 2), acct AS (SELECT uid FROM a WHERE uid > 1010) SELECT * FROM acct ORDER BY uid",
        "WITH RECURSIVE acct (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM acct WHERE n < 5) SELECT * FROM acct",
        "WITH acct AS (SELECT uid, handle FROM acct WHERE uid = 1003) SELECT * FROM acct",
        "WITH x AS (SELECT * FROM acct WHERE flags = 3) SELECT COUNT(*), SUM(balance) FROM x",
        "WITH acct AS (SELECT COUNT(*) AS n FROM acct) SELECT n FROM acct",
        "WITH acct AS (SELECT 7 AS uid) SELECT uid FROM acct UNION ALL SELECT 8",
        "WITH acct AS (SELECT uid FROM acct WHERE flags = 4) SELECT (SELECT COUNT(*) FROM acct)",
        "WITH acct AS (SELECT 1 AS uid) SELECT COUNT(*) FROM acct AS t WHERE t.uid = 1",
        "WITH `acct` AS (SELECT 2 AS uid) SELECT uid FROM `acct`",
        "WITH acct AS (SELECT uid FROM acct WHERE flags = 0) SELECT a.uid, b.uid FROM acct a JOIN acct b ON b.uid = a.uid + 5 ORDER BY a.uid",
    ] {
        h.check(sql).await;
    }
    h.report("CTE named like a table", 12);
}

// ---- SELECT ... INTO @v over several partitions -------------------------

/// Issue 29 ("Refused, but one server answers"): `SELECT ... INTO @v`
/// over several partitions.
#[tokio::test]
async fn select_into_a_variable_over_several_partitions() {
    let mut h = acct("si_issue").await;
    h.check("SELECT COUNT(*) INTO @v FROM acct").await;
    h.check("SELECT @v").await;
    h.report("SELECT INTO @v", 2);
}

/// The class: aggregates, one row by ORDER BY ... LIMIT 1, several
/// variables, INTO at the end, no row (warning 1329, the variables keep
/// their values), several rows (1172), a wrong number of variables, a
/// point read on one partition, the variables used by later reads over
/// several partitions, inside a transaction.
#[tokio::test]
async fn select_into_variables_over_partitions() {
    let mut h = acct("si_class").await;
    for sql in [
        "BEGIN",
        "SELECT COUNT(DISTINCT handle) INTO @d FROM acct",
        "COMMIT",
        "SELECT @d, @v IS NULL",
        "SELECT uid INTO @w FROM acct WHERE flags = 3 ORDER BY uid LIMIT 1",
        "SELECT @w",
        "SELECT MIN(balance), MAX(balance), SUM(flags) INTO @lo, @hi, @s FROM acct",
        "SELECT @lo, @hi, @s",
        "SELECT handle, balance FROM acct WHERE flags = 2 ORDER BY balance DESC LIMIT 1 INTO @h, @b",
        "SELECT @h, @b",
        "SELECT uid INTO @w FROM acct WHERE flags = 99",
        "SELECT @w",
        "SELECT uid INTO @w FROM acct WHERE flags = 1 ORDER BY uid",
        "SELECT @w",
        "SELECT uid, handle INTO @w FROM acct WHERE uid = 1001",
        "SELECT handle INTO @one FROM acct WHERE uid = 1002",
        "SELECT @one",
        "SELECT COUNT(*) FROM acct WHERE uid > @w",
        "SELECT uid FROM acct WHERE flags = @s % 5 ORDER BY uid",
    ] {
        h.check(sql).await;
    }
    h.report("SELECT INTO @v", 19);
}
