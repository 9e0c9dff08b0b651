//! The digest of ids the integrity checks compare: every id in `1..=expected` seen exactly once. A bitmap
//! (1.25 MB for 10M rows) rather than a hash, so a doubled id and a missing one are both caught and counted.

/// Ids seen, with what did not fit.
#[derive(Debug, Clone, Default)]
pub struct IdSet {
    expected: u64,
    seen: Vec<u64>,
    pub count: u64,
    pub doubled: u64,
    pub out_of_range: u64,
}

impl IdSet {
    /// A set for ids `1..=expected`.
    pub fn new(expected: u64) -> Self {
        IdSet { expected, seen: vec![0; expected.div_ceil(64) as usize], ..Default::default() }
    }

    pub fn insert(&mut self, id: i64) {
        self.count += 1;
        if id < 1 || id as u64 > self.expected {
            self.out_of_range += 1;
            return;
        }
        let i = (id - 1) as u64;
        let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        if self.seen[word] & bit != 0 {
            self.doubled += 1;
        } else {
            self.seen[word] |= bit;
        }
    }

    /// Ids in `1..=expected` never seen.
    pub fn missing(&self) -> u64 {
        let seen: u64 = self.seen.iter().map(|w| u64::from(w.count_ones())).sum();
        self.expected - seen
    }

    /// Exactly `1..=expected`, once each.
    pub fn is_exact(&self) -> bool {
        self.count == self.expected && self.doubled == 0 && self.out_of_range == 0 && self.missing() == 0
    }

    /// e.g. `1000 ids, 0 missing, 0 doubled, 0 outside 1..=1000`.
    pub fn describe(&self) -> String {
        format!(
            "{} ids, {} missing, {} doubled, {} outside 1..={}",
            self.count,
            self.missing(),
            self.doubled,
            self.out_of_range,
            self.expected
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_once_is_exact() {
        let mut s = IdSet::new(130);
        (1..=130).for_each(|i| s.insert(i));
        assert!(s.is_exact(), "{}", s.describe());
    }

    #[test]
    fn a_lost_or_doubled_id_is_caught_even_when_the_count_matches() {
        let mut s = IdSet::new(100);
        (1..=99).for_each(|i| s.insert(i));
        s.insert(50);
        assert_eq!(s.count, 100, "the count alone would pass");
        assert!(!s.is_exact());
        assert_eq!((s.missing(), s.doubled), (1, 1));
        let mut lost = IdSet::new(100);
        (2..=100).for_each(|i| lost.insert(i));
        assert_eq!((lost.missing(), lost.is_exact()), (1, false));
        let mut stray = IdSet::new(3);
        [1, 2, 3, 4].into_iter().for_each(|i| stray.insert(i));
        assert_eq!((stray.out_of_range, stray.is_exact()), (1, false));
    }
}
