//! Entry ids as an opened session holds them: short ids (pi's are 8 hex characters) inline,
//! without a heap allocation each, and a fast hash for the id index (the ids come from the
//! user's own file, so there is no adversary to resist).

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash, Hasher};

const INLINE: usize = 22;

/// An entry id: inline when at most 22 bytes long, boxed otherwise.
#[derive(Clone)]
pub(crate) enum Id {
    Inline(u8, [u8; INLINE]),
    Boxed(Box<str>),
}

impl Id {
    pub(crate) fn new(s: &str) -> Id {
        match u8::try_from(s.len()) {
            Ok(len) if s.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..s.len()].copy_from_slice(s.as_bytes());
                Id::Inline(len, bytes)
            }
            _ => Id::Boxed(Box::from(s)),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            // Always whole UTF-8: the bytes were copied from a `str`.
            Id::Inline(len, bytes) => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Id::Boxed(s) => s,
        }
    }
}

impl std::fmt::Debug for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Id) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Id {}

/// Hashes as the `str` does, so the index can be looked up by `&str`.
impl Hash for Id {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl Borrow<str> for Id {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

/// A multiply-rotate hash (the one rustc uses for its own tables): a few cycles per 8 bytes
/// where SipHash takes tens.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FastHash;

impl BuildHasher for FastHash {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(0)
    }
}

pub(crate) struct FastHasher(u64);

const SEED: u64 = 0x517c_c1b7_2722_0a95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    /// The state, its high bits folded down (splitmix64's finalizer): a product's low bits
    /// depend only on the factors' low bits, so ids that differ only in their last bytes
    /// (`…0001`, `…0002`) would otherwise share the low bits that pick the bucket.
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_any_length_round_trip_and_are_found_by_str() {
        let long = "x".repeat(40);
        let ids = [
            "",
            "a",
            "0123abcd",
            "é字🙂",
            "1234567890123456789012",
            &long,
        ];
        let mut index = std::collections::HashMap::<Id, usize, FastHash>::default();
        for (i, s) in ids.iter().enumerate() {
            let id = Id::new(s);
            assert_eq!(id.as_str(), *s);
            index.insert(id, i);
        }
        for (i, s) in ids.iter().enumerate() {
            assert_eq!(index.get(*s), Some(&i), "{s}");
        }
        assert!(matches!(Id::new(&long), Id::Boxed(_)));
        // Sequential ids spread over the low bits that pick a bucket.
        let buckets: std::collections::HashSet<u64> = (0..4096)
            .map(|i| FastHash.hash_one(format!("{i:08x}").as_str()) & 4095)
            .collect();
        assert!(buckets.len() > 2048, "{} buckets", buckets.len());
        assert!(matches!(Id::new(ids[4]), Id::Inline(..)));
        assert_eq!(std::mem::size_of::<Option<Id>>(), 24);
    }
}
