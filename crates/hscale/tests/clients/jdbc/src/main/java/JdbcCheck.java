// Exercises hscale through MySQL Connector/J, the driver HSCALE's users ran.
// Usage: java JdbcCheck HOST PORT DB [tls|compress] ; prints "jdbc ok" (or "jdbc tls ok", "jdbc compress ok")
// or exits 1 naming the mismatch.
import java.math.BigDecimal;
import java.sql.*;
import java.util.*;
import java.util.concurrent.*;

public class JdbcCheck {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("MISMATCH: " + what);
            System.exit(1);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 3 && args[3].equals("tls")) {
            tls("jdbc:mysql://" + args[0] + ":" + args[1] + "/" + args[2]
                + "?user=root&password=&sslMode=REQUIRED&allowPublicKeyRetrieval=true");
            return;
        }
        if (args.length > 3 && args[3].equals("compress")) {
            compress("jdbc:mysql://" + args[0] + ":" + args[1] + "/" + args[2]
                + "?user=root&password=&sslMode=DISABLED&allowPublicKeyRetrieval=true&useCompression=true");
            return;
        }
        String base = "jdbc:mysql://" + args[0] + ":" + args[1] + "/" + args[2]
            + "?user=root&password=&sslMode=DISABLED&allowPublicKeyRetrieval=true";
        int m = 0;
        for (String mode : new String[] {"&useServerPrepStmts=true&cachePrepStmts=true", "&useServerPrepStmts=false"}) {
            run(base + mode, mode);
            sequence(base + mode, mode, "j_seq" + m++);
        }
        cursorFetch(base + "&useServerPrepStmts=true&useCursorFetch=true");
        concurrency(base + "&useServerPrepStmts=true");
        System.out.println("jdbc ok");
    }

    /**
     * A partitioned table whose AUTO_INCREMENT ids come from hscale's
     * sequence: generated keys of single inserts, batches and a multi-row
     * INSERT (Connector/J computes the later keys from the first, so the
     * ids of one statement must be consecutive), each naming its own row.
     */
    static void sequence(String url, String mode, String table) throws Exception {
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS " + table);
                s.execute("CREATE TABLE " + table + " (id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, name VARCHAR(20))");
                String db = c.getCatalog();
                s.execute("HSCALE SETUP_TABLE('" + db + "." + table + "', 'k', '" + table + "_default', 'shard0', 'MOD(2)')");
                s.execute("HSCALE ADD_PARTITION('" + db + "." + table + "', 'p1', '1', 'shard1')");
            }
            Map<Long, String> want = new HashMap<>();
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT INTO " + table + " (k, name) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 0; i < 6; i++) {
                    p.setInt(1, i % 2);
                    p.setString(2, "one" + i);
                    check(p.executeUpdate() == 1, "sequence insert" + mode);
                    try (ResultSet rs = p.getGeneratedKeys()) {
                        check(rs.next(), "a generated key" + mode);
                        want.put(rs.getLong(1), "one" + i);
                    }
                    try (Statement s = c.createStatement();
                         ResultSet rs = s.executeQuery("SELECT LAST_INSERT_ID()")) {
                        check(rs.next() && want.get(rs.getLong(1)) != null
                            && want.get(rs.getLong(1)).equals("one" + i), "LAST_INSERT_ID() after a prepared insert" + mode);
                    }
                }
                for (int i = 0; i < 4; i++) {
                    p.setInt(1, i % 2);
                    p.setString(2, "batch" + i);
                    p.addBatch();
                }
                p.executeBatch();
                try (ResultSet rs = p.getGeneratedKeys()) {
                    for (int i = 0; i < 4; i++) {
                        check(rs.next(), "a batch's generated key" + mode);
                        want.put(rs.getLong(1), "batch" + i);
                    }
                }
            }
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT INTO " + table + " (k, name) VALUES (?, ?), (?, ?), (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 0; i < 3; i++) {
                    p.setInt(2 * i + 1, 0);
                    p.setString(2 * i + 2, "multi" + i);
                }
                check(p.executeUpdate() == 3, "multi-row sequence insert" + mode);
                try (ResultSet rs = p.getGeneratedKeys()) {
                    for (int i = 0; i < 3; i++) {
                        check(rs.next(), "a multi-row generated key" + mode);
                        want.put(rs.getLong(1), "multi" + i);
                    }
                }
            }
            check(want.size() == 13, "13 distinct generated keys" + mode + ": " + want);
            try (PreparedStatement p = c.prepareStatement("SELECT name FROM " + table + " WHERE id = ?")) {
                for (Map.Entry<Long, String> e : want.entrySet()) {
                    p.setLong(1, e.getKey());
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.next() && rs.getString(1).equals(e.getValue()),
                            "generated key " + e.getKey() + " names " + e.getValue() + mode);
                    }
                }
            }
        }
    }

    /** sslMode=REQUIRED: TLS without verifying the server's certificate. */
    static void tls(String url) throws Exception {
        for (String mode : new String[] {"&useServerPrepStmts=true", "&useServerPrepStmts=false"}) {
            try (Connection c = DriverManager.getConnection(url + mode);
                 PreparedStatement p = c.prepareStatement("SELECT ? + 1")) {
                p.setInt(1, 41);
                try (ResultSet rs = p.executeQuery()) {
                    check(rs.next() && rs.getInt(1) == 42, "SELECT ? + 1 over TLS" + mode);
                }
            }
        }
        System.out.println("jdbc tls ok");
    }

    /** useCompression=true: a 4 MB result and a 1 MB parameter, both prepare modes. */
    static void compress(String url) throws Exception {
        for (String mode : new String[] {"&useServerPrepStmts=true", "&useServerPrepStmts=false"}) {
            try (Connection c = DriverManager.getConnection(url + mode)) {
                try (Statement s = c.createStatement();
                     ResultSet rs = s.executeQuery("SELECT REPEAT('a', 4000000)")) {
                    check(rs.next() && rs.getString(1).length() == 4000000, "a 4 MB result compressed" + mode);
                }
                char[] big = new char[1000000];
                Arrays.fill(big, 'q');
                try (PreparedStatement p = c.prepareStatement("SELECT LENGTH(?), ? + 1")) {
                    p.setString(1, new String(big));
                    p.setInt(2, 41);
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.next() && rs.getLong(1) == 1000000 && rs.getInt(2) == 42, "a 1 MB parameter compressed" + mode);
                    }
                }
            }
        }
        System.out.println("jdbc compress ok");
    }

    static void run(String url, String mode) throws Exception {
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS j_t");
                s.execute("CREATE TABLE j_t (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50), price DECIMAL(10,2), "
                    + "at DATETIME, data BLOB, note TEXT NULL)");
            }
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT INTO j_t (name, price, at, data, note) VALUES (?, ?, ?, ?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 0; i < 50; i++) {
                    p.setString(1, "Zoë ☃ " + i);
                    p.setBigDecimal(2, new BigDecimal(i + ".25"));
                    p.setTimestamp(3, Timestamp.valueOf("2024-02-29 13:14:" + String.format("%02d", i % 60)));
                    p.setBytes(4, new byte[] {0, (byte) i, (byte) 0xff});
                    if (i % 2 == 0) p.setNull(5, Types.VARCHAR); else p.setString(5, "n" + i);
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                check(counts.length == 50, mode + ": batch size");
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO j_t (name) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                p.setString(1, "last");
                p.executeUpdate();
                try (ResultSet k = p.getGeneratedKeys()) {
                    check(k.next() && k.getLong(1) == 51, mode + ": generated key");
                }
            }
            try (PreparedStatement p = c.prepareStatement("SELECT id, name, price, at, data, note FROM j_t WHERE id = ?")) {
                for (int i = 1; i <= 50; i++) {
                    p.setInt(1, i);
                    try (ResultSet r = p.executeQuery()) {
                        check(r.next(), mode + ": row " + i);
                        int n = i - 1;
                        check(r.getString(2).equals("Zoë ☃ " + n), mode + ": name " + r.getString(2));
                        check(r.getBigDecimal(3).equals(new BigDecimal(n + ".25")), mode + ": price " + r.getBigDecimal(3));
                        check(r.getTimestamp(4).equals(Timestamp.valueOf("2024-02-29 13:14:" + String.format("%02d", n % 60))), mode + ": at");
                        check(Arrays.equals(r.getBytes(5), new byte[] {0, (byte) n, (byte) 0xff}), mode + ": data");
                        check((n % 2 == 0) == (r.getString(6) == null), mode + ": note null");
                        check(!r.next(), mode + ": one row");
                    }
                }
            }
            // Transactions.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("DELETE FROM j_t WHERE id <= 10");
                c.rollback();
                try (ResultSet r = s.executeQuery("SELECT COUNT(*) FROM j_t")) {
                    check(r.next() && r.getInt(1) == 51, mode + ": rollback");
                }
                s.executeUpdate("DELETE FROM j_t WHERE id <= 10");
                c.commit();
            }
            c.setAutoCommit(true);
            // Isolation level and read-only are session state that must follow the session.
            c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            for (int i = 0; i < 20; i++) {
                try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT @@tx_isolation, COUNT(*) FROM j_t")) {
                    check(r.next() && r.getString(1).equals("READ-COMMITTED"), mode + ": isolation " + r.getString(1));
                    check(r.getInt(2) == 41, mode + ": count after commit");
                }
                // Another connection in between takes pooled backend connections.
                try (Connection o = DriverManager.getConnection(url); Statement s = o.createStatement();
                     ResultSet r = s.executeQuery("SELECT @@tx_isolation")) {
                    check(r.next() && r.getString(1).equals("REPEATABLE-READ"), mode + ": isolation leaked " + r.getString(1));
                }
            }
            // Errors keep the connection usable.
            try (Statement s = c.createStatement()) {
                try {
                    s.executeQuery("SELECT * FROM no_such_table");
                    check(false, mode + ": error expected");
                } catch (SQLException e) {
                    check(e.getErrorCode() == 1146, mode + ": error code " + e.getErrorCode());
                }
                try (ResultSet r = s.executeQuery("SELECT 1")) {
                    check(r.next() && r.getInt(1) == 1, mode + ": usable after error");
                }
            }
        }
    }

    static void cursorFetch(String url) throws Exception {
        try (Connection c = DriverManager.getConnection(url);
             PreparedStatement p = c.prepareStatement("SELECT seq, CONCAT('v', seq) FROM seq_1_to_1000 WHERE seq > ?")) {
            p.setFetchSize(10);
            p.setInt(1, 0);
            long n = 0, sum = 0;
            try (ResultSet r = p.executeQuery()) {
                while (r.next()) {
                    n++;
                    sum += r.getLong(1);
                    check(r.getString(2).equals("v" + r.getLong(1)), "cursor value");
                }
            }
            check(n == 1000 && sum == 500500, "cursor fetch rows " + n + " sum " + sum);
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT 2")) {
                check(r.next() && r.getInt(1) == 2, "after cursor");
            }
        }
    }

    static void concurrency(String url) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        List<Future<Boolean>> results = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            final int tid = t;
            results.add(pool.submit(() -> {
                try (Connection c = DriverManager.getConnection(url);
                     PreparedStatement p = c.prepareStatement("SELECT ? + seq FROM seq_1_to_3")) {
                    for (int i = 0; i < 200; i++) {
                        p.setInt(1, tid * 1000 + i);
                        try (ResultSet r = p.executeQuery()) {
                            long sum = 0;
                            while (r.next()) sum += r.getLong(1);
                            if (sum != 3L * (tid * 1000 + i) + 6) return false;
                        }
                    }
                    return true;
                }
            }));
        }
        for (Future<Boolean> f : results) check(f.get(), "concurrent prepared statements");
        pool.shutdown();
    }
}
