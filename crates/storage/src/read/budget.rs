//! The decode budget: the most bytes one decoded batch of a table may hold.
//!
//! Each page's decoded size is already bounded by what it stores
//! (`codec::MAX_EXPANSION`), but a chunk's extent may hold hundreds of pages, so a
//! chunk of hostile pages (valid checksums, every page at that bound) decoded to
//! gigabytes before anything refused it. The decoder charges each page's declared
//! decoded size against this budget before decoding the page and refuses the batch
//! once it would pass it, so memory stays bounded whatever the file says; a trusted
//! table whose batches are larger is read with a larger budget.

/// The most bytes of decoded values one batch (a chunk's wanted tuples, all projected
/// columns) may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeBudget {
    bytes: u64,
}

impl DecodeBudget {
    /// 1 GiB: a writer sizes chunks by their plain bytes, at most
    /// `write::MAX_CHUNK_BYTES` (64 MiB), so a valid chunk decodes to about that much
    /// (up to 4× where later rows are wider, as `MAX_EXTENT_BYTES` allows); TPC-H
    /// lineitem at the default 4 MiB chunks decodes to about 5 MB a chunk.
    pub const DEFAULT_MIB: u64 = 1024;
    /// 1 TiB: far above any memory this runs on, far below a byte count's overflow.
    pub const MAX_MIB: u64 = 1 << 20;
    const MIB: u64 = 1 << 20;

    /// A budget of `mib` MiB, 1 to [`Self::MAX_MIB`].
    pub fn from_mib(mib: u64) -> Result<DecodeBudget, String> {
        if !(1..=Self::MAX_MIB).contains(&mib) {
            return Err(format!(
                "a decode budget of {mib} MiB is outside 1..={}",
                Self::MAX_MIB
            ));
        }
        Ok(DecodeBudget {
            bytes: mib * Self::MIB,
        })
    }

    /// A budget of exactly `bytes` (at least one byte): for tests that need one
    /// smaller than a MiB.
    pub fn from_bytes(bytes: u64) -> DecodeBudget {
        DecodeBudget {
            bytes: bytes.clamp(1, Self::MAX_MIB * Self::MIB),
        }
    }

    pub fn bytes(self) -> u64 {
        self.bytes
    }
}

impl Default for DecodeBudget {
    fn default() -> Self {
        DecodeBudget {
            bytes: Self::DEFAULT_MIB * Self::MIB,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_outside_the_range_are_refused() {
        assert!(DecodeBudget::from_mib(0).is_err());
        assert!(DecodeBudget::from_mib(DecodeBudget::MAX_MIB + 1).is_err());
        assert_eq!(DecodeBudget::from_mib(3).unwrap().bytes(), 3 << 20);
        assert_eq!(DecodeBudget::default().bytes(), 1 << 30);
        assert_eq!(DecodeBudget::from_bytes(0).bytes(), 1);
    }
}
