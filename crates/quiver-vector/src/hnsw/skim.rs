//! Skimming in a region search: a region whose first sixteen members all fail a filter that keeps
//! whole clusters is taken as failing, unjudged, while what the search has judged says the filter is
//! of that kind ([`Skim`]).

/// Whether a region search may take a region whose first sixteen members all fail as failing whole,
/// unjudged: what the regions judged whole so far say about the filter.
///
/// A filter that keeps whole clusters leaves most regions a search reads with no passing member (the
/// confirming regions after its last improvement, above all), and judging members was a quarter of
/// such a search's samples on one instance (BENCHMARKS.md, session 34). Such a filter shows itself in the
/// regions judged whole: some pass (nearly) every member, and none passes only a few. A filter that keeps
/// records at random never passes nearly every member of a full region, and one that keeps a few
/// records a region shows regions passing few. So a region is skimmed (its first sixteen judged, and
/// the rest only if one of them passes) once `WHOLE` regions of `WHOLE_FROM` members or more have passed
/// nine in ten of their members, while no region judged whole has passed one in ten or fewer, and no
/// region whose first sixteen failed has had a passing member after them. One in `CHECK_EVERY` such
/// regions is still judged whole, so a filter that breaks the pattern later in the search stops the
/// skimming. Measured on the benchmark's rows (100,000 x 384, 1,000 clusters): no region read under a
/// whole-cluster filter had its first sixteen members all fail and a later one pass, so those rows find
/// the same records as before, and the rows that keep records at random read the same. What this
/// trades: a filter that keeps whole clusters and, besides, a few records scattered thinner than one a
/// region can lose such records in the regions skimmed before a check finds one.
#[derive(Debug, Default)]
pub(super) struct Skim {
    /// Regions judged whole that passed nine in ten of their members or more.
    whole: usize,
    /// Regions that broke the pattern: judged whole, they passed some members but one in ten or
    /// fewer, or a passing member followed sixteen failing ones.
    broken: bool,
    /// Regions that may still be skimmed before one is judged whole again.
    credit: usize,
}

impl Skim {
    /// Regions passing nearly every member, seen before skimming starts.
    const WHOLE: usize = 2;

    /// The least members a region has for its verdict to count towards `WHOLE`.
    const WHOLE_FROM: usize = 32;

    /// One region in this many whose first sixteen fail is still judged whole.
    const CHECK_EVERY: usize = 8;

    /// Whether the next region may be skimmed.
    pub(super) fn allowed(&self) -> bool {
        self.whole >= Self::WHOLE && !self.broken && self.credit > 0
    }

    /// A region skimmed: its first sixteen members failed and the rest went unjudged.
    pub(super) fn skipped(&mut self) {
        self.credit -= 1;
    }

    /// A region judged whole: `first` of its first sixteen members passed, `passed` of all its
    /// `members`.
    pub(super) fn judged(&mut self, first: u32, passed: u32, members: usize) {
        let passed = passed as usize;
        if passed * 10 >= members * 9 && members >= Self::WHOLE_FROM {
            self.whole += 1;
        } else if passed > 0 && (passed * 10 <= members || first == 0) {
            self.broken = true;
        }
        // Only a region with members after its first sixteen shows whether any of them pass.
        if first == 0 && members > 16 {
            self.credit = Self::CHECK_EVERY - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_skimmed_only_while_every_region_judged_whole_passed_all_or_nothing() {
        // Records kept at random: no full region passes nine in ten, so nothing is skimmed.
        let mut skim = Skim::default();
        for _ in 0..100 {
            skim.judged(1, 10, 100);
            assert!(!skim.allowed());
        }
        // Whole clusters: two regions pass every member, then one with none starts the skimming,
        // and one region in `CHECK_EVERY` whose first sixteen fail is judged whole again.
        let mut skim = Skim::default();
        skim.judged(16, 100, 100);
        skim.judged(0, 0, 100);
        assert!(!skim.allowed(), "one region passing every member is not enough");
        let mut skim = Skim::default();
        skim.judged(16, 100, 100);
        skim.judged(16, 98, 100);
        assert!(
            !skim.allowed(),
            "no region whose first sixteen failed has been judged whole yet"
        );
        skim.judged(0, 0, 100);
        for _ in 0..Skim::CHECK_EVERY - 1 {
            assert!(skim.allowed());
            skim.skipped();
        }
        assert!(!skim.allowed(), "the next such region is judged whole");
        skim.judged(0, 0, 100);
        assert!(skim.allowed());
        // A small region passing all of its few members does not count.
        let mut small = Skim::default();
        for _ in 0..10 {
            small.judged(8, 8, 8);
        }
        small.judged(0, 0, 100);
        assert!(!small.allowed());
        // Nor does a region of sixteen members or fewer start the skimming: none follow its first.
        let mut short = Skim::default();
        short.judged(16, 100, 100);
        short.judged(16, 100, 100);
        short.judged(0, 0, 16);
        assert!(!short.allowed());
        // A passing member after sixteen failing ones, or a region passing few, stops the skimming
        // for the rest of the search.
        for (first, passed) in [(0, 3), (2, 5)] {
            let mut broken = Skim::default();
            broken.judged(16, 100, 100);
            broken.judged(16, 100, 100);
            broken.judged(first, passed, 100);
            broken.judged(0, 0, 100);
            broken.judged(16, 100, 100);
            assert!(!broken.allowed(), "{first} then {passed} passing");
        }
    }
}
