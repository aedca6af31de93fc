use super::*;

#[test]
fn account_hosts_match_as_the_server_matches_them() {
    let user = |host: Option<&str>| UserConfig {
        name: "u".into(),
        host: host.map(str::to_string),
        ..Default::default()
    };
    assert!(user(None).is_host_allowed(&["10.1.2.3"]));
    assert_eq!(user(None).host(), "%");
    assert!(user(Some("10.1.%")).is_host_allowed(&["10.1.2.3"]));
    assert!(!user(Some("10.1.%")).is_host_allowed(&["10.10.2.3"]));
    assert!(user(Some("127.0.0._")).is_host_allowed(&["127.0.0.1"]));
    assert!(!user(Some("127.0.0._")).is_host_allowed(&["127.0.0.12"]));
    assert!(user(Some("LOCALHOST")).is_host_allowed(&["localhost", "127.0.0.1"]));
    assert!(!user(Some("localhost")).is_host_allowed(&["127.0.0.1"]));
    assert!(user(Some("%.example.com")).is_host_allowed(&["db.example.com"]));
}

#[test]
fn problems_are_named() {
    let cfg = Config::parse(
        r#"
            [proxy]
            listen = "nowhere"
            [[users]]
            name = "a"
            [[users]]
            name = "a"
            [[backends]]
            name = "main"
            address = "127.0.0.1:3306"
            user = "u"
            min_connections = 9
            max_connections = 4
            "#,
    )
    .unwrap();
    let p = cfg.problems().join("\n");
    assert!(p.contains("listen = \"nowhere\""), "{p}");
    assert!(p.contains("defined twice"), "{p}");
    assert!(p.contains("min_connections (9) is larger"), "{p}");
}

#[test]
fn replicas_are_checked_and_left_out_when_empty() {
    let cfg = Config::parse(
        r#"
            [[users]]
            name = "a"
            [[backends]]
            name = "s0"
            address = "127.0.0.1:3306"
            user = "u"
            replicas = ["127.0.0.1:3310", "127.0.0.1:3310", "nowhere"]
            [[backends]]
            name = "s1"
            address = "127.0.0.1:3310"
            user = "u"
            "#,
    )
    .unwrap();
    let p = cfg.problems().join("\n");
    assert!(
        p.contains("replica \"127.0.0.1:3310\" is listed twice"),
        "{p}"
    );
    assert!(
        p.contains("replicas = \"nowhere\" is not an address"),
        "{p}"
    );
    assert!(p.contains("is listed as another backend's replica"), "{p}");
    assert_eq!(cfg.proxy.replica_max_lag_ms, 1_000);
    let plain = Config::parse(
        "[[users]]\nname='a'\n[[backends]]\nname='m'\naddress='127.0.0.1:1'\nuser='u'\n",
    )
    .unwrap();
    let written = toml::to_string(&plain).unwrap();
    assert!(!written.contains("replicas ="), "{written}");
    assert!(!written.contains("read_from"), "{written}");
}

#[test]
fn tls_needs_cert_and_key() {
    let cfg = Config::parse("[tls]\ncert = \"c.pem\"\nrequire = true\n").unwrap();
    let p = cfg.problems().join("\n");
    assert!(p.contains("[tls] cert and key go together"), "{p}");
    let cfg = Config::parse("[tls]\nrequire = true\n").unwrap();
    let p = cfg.problems().join("\n");
    assert!(p.contains("[tls] require = true needs cert and key"), "{p}");
    assert!(Config::parse("[tls]\nca = \"x\"\n").is_err());
}

#[test]
fn http_tls_and_tokens_are_checked() {
    let cfg = Config::parse("[http]\nlisten = \"127.0.0.1:1\"\ntls = true\n").unwrap();
    assert_eq!(cfg.http.session_idle_ms, 60_000);
    let p = cfg.problems().join("\n");
    assert!(
        p.contains("[http] tls = true needs [tls] cert and key"),
        "{p}"
    );
    let cfg = Config::parse(
        "[http]\nsession_idle_ms = 5\n[[users]]\nname='a'\nhttp_token='short'\n\
             [[users]]\nname='b'\nhttp_token='0123456789abcdef'\n\
             [[users]]\nname='c'\nhttp_token='0123456789abcdef'\nhost='10.%'\n",
    )
    .unwrap();
    let p = cfg.problems().join("\n");
    assert!(
        p.contains("session_idle_ms = 5 must be at least 100"),
        "{p}"
    );
    assert!(p.contains("#1: http_token must be at least 16"), "{p}");
    assert!(p.contains("#3: http_token is another user's too"), "{p}");
    assert!(
        p.contains("#3: http_token on an account bound to a host"),
        "{p}"
    );
    assert!(!p.contains("#2:"), "{p}");
    assert!(!format!("{:?}", cfg.users[1]).contains("0123456789abcdef"));
}

/// A written default config names none of the settings added since
/// older binaries (which refuse unknown fields): the playground's
/// config starts them, and bench/guard.sh runs two binaries on one.
#[test]
fn a_written_default_config_names_no_newer_setting() {
    let text = toml::to_string(&Config::parse("").unwrap()).unwrap();
    for newer in [
        "failover_after_ms",
        "[cache]",
        "\nmax_bytes =",
        "coalesce",
        "coalesce_max_members",
        "coalesce_turn_wait_ms",
        "online_schema_changes",
        "user_defaults",
    ] {
        assert!(!text.contains(newer), "{newer} in:\n{text}");
    }
    let on = Config::parse("[proxy]\nfailover_after_ms = 2000\n").unwrap();
    let text = toml::to_string(&on).unwrap();
    assert_eq!(Config::parse(&text).unwrap().proxy.failover_after_ms, 2000);
}

/// `[proxy] coalesce` is on unless set to false, and a written config
/// names it only when off (an older hscale refuses unknown fields).
#[test]
fn coalesce_is_written_only_when_off() {
    let cfg = Config::parse("").unwrap();
    assert!(cfg.proxy.coalesce);
    assert!(!toml::to_string(&cfg).unwrap().contains("coalesce"));
    let off = Config::parse("[proxy]\ncoalesce = false\n").unwrap();
    assert!(!off.proxy.coalesce);
    let text = toml::to_string(&off).unwrap();
    assert!(text.contains("coalesce = false"), "{text}");
    assert!(!Config::parse(&text).unwrap().proxy.coalesce);
}

/// `[cache]` is off unless max_bytes is set, and a written config
/// names it only when on.
#[test]
fn cache_is_written_only_when_on() {
    let cfg = Config::parse("").unwrap();
    assert_eq!(cfg.cache.max_bytes, 0);
    assert!(!toml::to_string(&cfg).unwrap().contains("[cache]"));
    let on = Config::parse("[cache]\nmax_bytes = 1048576\n").unwrap();
    let text = toml::to_string(&on).unwrap();
    assert!(text.contains("max_bytes = 1048576"), "{text}");
    assert_eq!(Config::parse(&text).unwrap().cache.max_bytes, 1 << 20);
    assert!(Config::parse("[cache]\nmax_byte = 1\n").is_err());
}

#[test]
fn unknown_fields_are_refused() {
    let e = Config::parse("[proxy]\nlisen = \"x\"\n").unwrap_err();
    assert!(e.contains("unknown field `lisen`"), "{e}");
}

#[test]
fn passwords_are_not_debug_printed() {
    let cfg = Config::parse(
            "[[users]]\nname='a'\npassword='topsecret'\n[[backends]]\nname='m'\naddress='127.0.0.1:1'\nuser='u'\npassword='alsosecret'\n",
        )
        .unwrap();
    let s = format!("{cfg:?}");
    assert!(!s.contains("topsecret") && !s.contains("alsosecret"));
}

#[test]
fn users_share_backend_identities() {
    let cfg = Config::parse(
            "[[users]]\nname='a'\nbackend_user='ro'\nbackend_password='x'\n[[users]]\nname='b'\n[[users]]\nname='c'\nbackend_user='ro'\nbackend_password='x'\n[[users]]\nname='d'\nbackend_user='rw'\nbackend_password='hidden'\n",
        )
        .unwrap();
    assert_eq!(cfg.identity("a"), 1);
    assert_eq!(cfg.identity("b"), 0);
    assert_eq!(cfg.identity("c"), 1);
    assert_eq!(cfg.identity("d"), 2);
    assert_eq!(cfg.identity("nobody"), 0);
    assert!(!format!("{cfg:?}").contains("hidden"));
    let bad = Config::parse("[[users]]\nname='a'\nbackend_password='x'\n").unwrap();
    assert!(bad
        .problems()
        .join("\n")
        .contains("backend_password without backend_user"));
}
