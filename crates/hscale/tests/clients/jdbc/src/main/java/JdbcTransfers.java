import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Random;

/**
 * A Java pool session through hscale: setAutoCommit(false), transfers
 * between accounts on two backends, commit and rollback, with server-side
 * and client-side prepared statements. Usage: JdbcTransfers HOST PORT DB
 * (DB exists and is empty; hscale has backends shard0 and shard1).
 * Prints "jdbc transfers ok" when every check passed.
 */
public class JdbcTransfers {
    static final int ACCOUNTS = 10;
    static final long TOTAL = 100L * ACCOUNTS;

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("check failed: " + what);
        }
    }

    static long balance(Connection c, int id) throws SQLException {
        try (PreparedStatement p = c.prepareStatement("SELECT balance FROM accounts WHERE id = ?")) {
            p.setInt(1, id);
            try (ResultSet r = p.executeQuery()) {
                check(r.next(), "no account " + id);
                return r.getLong(1);
            }
        }
    }

    static long total(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT CAST(SUM(balance) AS SIGNED) FROM accounts")) {
            check(r.next(), "no total");
            return r.getLong(1);
        }
    }

    static void transfer(PreparedStatement p, int from, int to, int amount) throws SQLException {
        p.setInt(1, -amount);
        p.setInt(2, from);
        check(p.executeUpdate() == 1, "debit of " + from);
        p.setInt(1, amount);
        p.setInt(2, to);
        check(p.executeUpdate() == 1, "credit of " + to);
    }

    public static void main(String[] args) throws Exception {
        String base = "jdbc:mysql://" + args[0] + ":" + args[1] + "/" + args[2]
            + "?user=root&password=&sslMode=DISABLED&allowPublicKeyRetrieval=true";
        try (Connection admin = DriverManager.getConnection(base); Statement s = admin.createStatement()) {
            s.execute("DROP TABLE IF EXISTS accounts");
            s.execute("CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance INT NOT NULL)");
            s.execute("HSCALE SETUP_TABLE('accounts', 'id', 'accounts_even', 'shard0', 'MOD(2)')");
            s.execute("HSCALE ADD_PARTITION('accounts', 'odd', '1', 'shard1')");
            for (int i = 1; i <= ACCOUNTS; i++) {
                s.execute("INSERT INTO accounts (id, balance) VALUES (" + i + ", 100)");
            }
        }
        for (String mode : new String[] {"&useServerPrepStmts=true&cachePrepStmts=true", "&useServerPrepStmts=false"}) {
            String url = base + mode;
            try (Connection other = DriverManager.getConnection(url);
                 Connection c = DriverManager.getConnection(url)) {
                c.setAutoCommit(false);
                PreparedStatement move = c.prepareStatement("UPDATE accounts SET balance = balance + ? WHERE id = ?");
                long a1 = balance(other, 1), a2 = balance(other, 2);
                // Odd id 1 on shard1, even id 2 on shard0.
                transfer(move, 1, 2, 30);
                check(balance(c, 1) == a1 - 30 && balance(c, 2) == a2 + 30, mode + ": own writes not seen");
                check(balance(other, 1) == a1 && balance(other, 2) == a2, mode + ": uncommitted writes seen");
                c.commit();
                check(balance(other, 1) == a1 - 30 && balance(other, 2) == a2 + 30, mode + ": commit not seen");

                long a3 = balance(other, 3), a4 = balance(other, 4);
                transfer(move, 3, 4, 50);
                c.rollback();
                check(balance(other, 3) == a3 && balance(other, 4) == a4, mode + ": rollback left a change");

                // A savepoint across both backends.
                transfer(move, 5, 6, 7);
                java.sql.Savepoint sp = c.setSavepoint("sp");
                transfer(move, 6, 5, 100);
                c.rollback(sp);
                c.commit();
                check(total(other) == TOTAL, mode + ": total changed after a savepoint: " + total(other));

                // Prepared statements over both partitions: rolled back
                // whole; one that fails on one partition (NULL into a NOT
                // NULL column) undone alone, the transaction goes on.
                long[] before = new long[5];
                for (int i = 1; i <= 4; i++) {
                    before[i] = balance(other, i);
                }
                PreparedStatement spread = c.prepareStatement(
                    "UPDATE accounts SET balance = IF(id = ?, NULL, balance + ?) WHERE id IN (?, ?, ?, ?)");
                spread.setInt(1, 0);
                spread.setInt(2, 5);
                for (int i = 1; i <= 4; i++) {
                    spread.setInt(2 + i, i);
                }
                check(spread.executeUpdate() == 4, mode + ": update over both partitions");
                c.rollback();
                for (int i = 1; i <= 4; i++) {
                    check(balance(other, i) == before[i], mode + ": rollback over both partitions left a change on " + i);
                }
                transfer(move, 1, 2, 3);
                spread.setInt(1, 4);
                spread.setInt(2, 1000);
                try {
                    spread.executeUpdate();
                    check(false, mode + ": NULL into a NOT NULL column accepted");
                } catch (SQLException e) {
                    check(e.getErrorCode() == 1048, mode + ": expected 1048, got " + e.getErrorCode());
                }
                c.commit();
                long[] want = {0, before[1] - 3, before[2] + 3, before[3], before[4]};
                for (int i = 1; i <= 4; i++) {
                    check(balance(other, i) == want[i], mode + ": a failed statement left part of itself on " + i
                        + ": " + balance(other, i) + " != " + want[i]);
                }
                spread.close();

                Random rng = new Random(13);
                int committed = 0;
                for (int i = 0; i < 60; i++) {
                    int from = 1 + rng.nextInt(ACCOUNTS);
                    int to = 1 + (from + rng.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
                    transfer(move, from, to, 1 + rng.nextInt(20));
                    if (rng.nextInt(10) < 3) {
                        c.rollback();
                    } else {
                        c.commit();
                        committed++;
                    }
                }
                check(committed > 20, mode + ": only " + committed + " committed");
                check(total(other) == TOTAL, mode + ": total changed: " + total(other));
                // Back to autocommit: an open transaction commits, as in MySQL.
                transfer(move, 2, 1, 30);
                c.setAutoCommit(true);
                check(total(other) == TOTAL, mode + ": total changed at setAutoCommit(true): " + total(other));
                move.close();
            }
        }
        System.out.println("jdbc transfers ok");
    }
}
