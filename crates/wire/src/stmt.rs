//! Prepared-statement packets: the `COM_STMT_PREPARE` OK and the
//! `COM_STMT_EXECUTE` request, which the proxy rewrites with the backend's
//! statement id and the parameter types the client sent earlier.

use bytes::{BufMut, BytesMut};

use crate::buf::Reader;
use crate::consts::com;
use crate::WireError;

/// The first packet of a successful `COM_STMT_PREPARE` response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareOk {
    pub statement_id: u32,
    pub num_columns: u16,
    pub num_params: u16,
    pub warnings: u16,
}

impl PrepareOk {
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(payload);
        if r.u8()? != 0 {
            return Err(WireError::Malformed("not a prepare OK packet"));
        }
        let statement_id = r.u32()?;
        let num_columns = r.u16()?;
        let num_params = r.u16()?;
        r.skip(1)?;
        let warnings = if r.remaining() >= 2 { r.u16()? } else { 0 };
        Ok(PrepareOk {
            statement_id,
            num_columns,
            num_params,
            warnings,
        })
    }

    pub fn encode(&self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[1..5].copy_from_slice(&self.statement_id.to_le_bytes());
        b[5..7].copy_from_slice(&self.num_columns.to_le_bytes());
        b[7..9].copy_from_slice(&self.num_params.to_le_bytes());
        b[10..12].copy_from_slice(&self.warnings.to_le_bytes());
        b
    }
}

/// The statement id of a `COM_STMT_*` packet (bytes 1..5).
pub fn statement_id(payload: &[u8]) -> Result<u32, WireError> {
    let mut r = Reader::new(payload);
    r.skip(1)?;
    r.u32()
}

/// The parts of a `COM_STMT_EXECUTE` the proxy needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execute<'a> {
    pub statement_id: u32,
    pub flags: u8,
    pub null_bitmap: &'a [u8],
    /// Two bytes per parameter, present when the client (re)bound types.
    pub types: Option<&'a [u8]>,
    pub values: &'a [u8],
}

impl<'a> Execute<'a> {
    /// Decode an execute packet for a statement with `num_params` parameters.
    pub fn decode(payload: &'a [u8], num_params: usize) -> Result<Self, WireError> {
        let mut r = Reader::new(payload);
        if r.u8()? != com::STMT_EXECUTE {
            return Err(WireError::Malformed("not COM_STMT_EXECUTE"));
        }
        let statement_id = r.u32()?;
        let flags = r.u8()?;
        r.skip(4)?; // iteration count, always 1
        if num_params == 0 {
            return Ok(Execute {
                statement_id,
                flags,
                null_bitmap: &[],
                types: None,
                values: r.rest(),
            });
        }
        let null_bitmap = r.take(num_params.div_ceil(8))?;
        let bound = r.u8()?;
        let types = if bound == 1 {
            Some(r.take(num_params * 2)?)
        } else {
            None
        };
        Ok(Execute {
            statement_id,
            flags,
            null_bitmap,
            types,
            values: r.rest(),
        })
    }

    /// Re-encode for a backend statement id, always with parameter types
    /// (so that any backend connection can run it, whatever it saw before).
    pub fn encode_for(&self, backend_id: u32, types: &[u8]) -> BytesMut {
        let mut b =
            BytesMut::with_capacity(11 + self.null_bitmap.len() + types.len() + self.values.len());
        b.put_u8(com::STMT_EXECUTE);
        b.put_u32_le(backend_id);
        b.put_u8(self.flags);
        b.put_u32_le(1);
        if !self.null_bitmap.is_empty() {
            b.put_slice(self.null_bitmap);
            b.put_u8(1);
            b.put_slice(types);
        }
        b.put_slice(self.values);
        b
    }
}

/// Replace the statement id (bytes 1..5) of a `COM_STMT_*` packet.
pub fn with_statement_id(payload: &[u8], id: u32) -> BytesMut {
    let mut b = BytesMut::from(payload);
    if b.len() >= 5 {
        b[1..5].copy_from_slice(&id.to_le_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn execute_rewrite_adds_types() {
        // stmt 7, no cursor, 2 params, second NULL, types not bound, value: i32 5
        let mut p = vec![com::STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0b10, 0];
        p.extend_from_slice(&5i32.to_le_bytes());
        let e = Execute::decode(&p, 2).unwrap();
        assert_eq!(e.types, None);
        let types = [3u8, 0, 6, 0];
        let out = e.encode_for(99, &types);
        let d = Execute::decode(&out, 2).unwrap();
        assert_eq!(d.statement_id, 99);
        assert_eq!(d.types, Some(&types[..]));
        assert_eq!(d.values, &5i32.to_le_bytes()[..]);
        assert_eq!(d.null_bitmap, &[0b10]);
    }

    proptest! {
        #[test]
        fn execute_decode_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64), n in 0usize..20) {
            let _ = Execute::decode(&data, n);
            let _ = PrepareOk::decode(&data);
            let _ = statement_id(&data);
        }
    }
}
