//! When a region search stops reading regions ([`Patience`]).

/// A region search stops once this many regions in a row, each holding passing nodes, left its `k`
/// best as they were. Measured on the benchmark's clusters (100,000 x 384, 1,000 clusters), recall@10:
/// 0.988 for a random 10 % filter (about 2,200 nodes judged), 0.982 for 10 % of whole clusters kept
/// (about 21,000 judged) and 0.963 for half of them; 8 regions gave 0.948 and 0.942.
pub(super) const PATIENCE: usize = 16;

/// And once the passing nodes of those regions number this many: where few of a region's nodes pass
/// (a filter keeping 1 % of records at random keeps about one a region), sixteen regions are too few
/// to hold the next-nearest passing records. Measured as above: recall@10 0.857 for a random 1 %
/// filter with regions alone, 0.956 with 100 nodes and 0.983 with 200.
pub(super) const PATIENCE_NODES: usize = 200;

/// Or once this many regions, empty ones too, have been read in a row without change: a filter that
/// keeps a few whole clusters leaves few regions holding passing nodes (ten of a thousand for 1 % of
/// the benchmark's clusters), so `PATIENCE` of them would read nearly every region.
pub(super) const PATIENCE_READ: usize = 160;

/// The most passing nodes a region counts towards `PATIENCE_NODES` where `PATIENCE` regions end the
/// search. A filter that keeps whole clusters and, besides, records scattered over every cluster
/// (`category = 'x' OR pinned = true`) gives the regions a search reads after the nearest kept ones a
/// passing node or two each: its next-nearest records are scattered ones, about one a region, and
/// counting a kept region's hundred members would end the search after two kept regions and fourteen
/// others. Measured on the benchmark (10 % of its clusters kept, and 1 % or 0.1 % of records):
/// recall@10 0.897 and 0.947 counting every node, 0.955 and 0.965 counting sixteen a region (ten:
/// 0.966 and 0.975, with the rows that keep half the records about a sixth slower); every other row
/// reads as before, as sixteen regions of sixteen nodes already pass `PATIENCE_NODES`.
pub(super) const COUNTED_PER_REGION: usize = 16;

/// How many regions holding passing nodes end a search whose query's own region (the nearest centre's)
/// passed nearly whole, once none of them changed the `k` best. Such a filter keeps the query's
/// neighbourhood, so its `k` best are those an unfiltered search finds, in its own region and the
/// next ones; the sixteen of `PATIENCE` are there for a query whose own region is rejected, where the
/// nearest passing records lie spread over many kept regions at near-equal distances. Measured on the
/// benchmark (100,000 x 384, 1,000 clusters), the queries whose own cluster a filter keeping half of
/// the clusters kept (540 of 1,000): the `k` best last changed at the 1.1th region read on average;
/// recall@10 1.000 with 2, 4 and 8 regions (0.999 with 1), 118 us a query with 16, 67 with 4.
pub(super) const OWN_REGION_PATIENCE: usize = 4;

/// What a region search has read since its `k` best last changed, and whether that is enough to stop:
/// `PATIENCE` regions holding passing nodes and `PATIENCE_NODES` of those nodes, counting at most
/// `COUNTED_PER_REGION` a region; or `PATIENCE_READ` regions, empty ones too, and `PATIENCE_NODES`
/// passing nodes, every one counted; or, where the query's own region passed nearly whole,
/// `OWN_REGION_PATIENCE` regions holding passing nodes.
#[derive(Debug, Default)]
pub(super) struct Patience {
    /// Regions holding passing nodes.
    regions: usize,
    /// Regions read, empty ones too.
    read: usize,
    /// Passing nodes scored.
    nodes: usize,
    /// Passing nodes scored, at most `COUNTED_PER_REGION` a region.
    spread: usize,
    /// Whether the query's own region passed nearly whole: kept when the count starts again.
    own_region_kept: bool,
}

impl Patience {
    /// Whether the search has read enough without change to stop (once it holds its `k` best).
    pub(super) fn exhausted(&self) -> bool {
        (self.regions >= PATIENCE && self.spread >= PATIENCE_NODES)
            || (self.read >= PATIENCE_READ && self.nodes >= PATIENCE_NODES)
            || (self.own_region_kept && self.regions >= OWN_REGION_PATIENCE)
    }

    /// The query's own region, the first read, passed nearly whole: the filter keeps the query's
    /// neighbourhood, and `OWN_REGION_PATIENCE` regions will do.
    pub(super) fn own_region_kept(&mut self) {
        self.own_region_kept = true;
    }

    /// A region read: `passing` of its nodes passed and were scored, and they `improved` the `k` best
    /// or did not.
    pub(super) fn read(&mut self, passing: usize, improved: bool) {
        if improved {
            *self = Patience {
                own_region_kept: self.own_region_kept,
                ..Patience::default()
            };
            return;
        }
        self.read += 1;
        if passing > 0 {
            self.regions += 1;
            self.nodes += passing;
            self.spread += passing.min(COUNTED_PER_REGION);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many regions passing `passing` nodes each, none improving, are read before the search stops.
    fn regions_read(passing: usize) -> usize {
        let mut patience = Patience::default();
        (1..)
            .find(|_| {
                patience.read(passing, false);
                patience.exhausted()
            })
            .expect("stops")
    }

    #[test]
    fn a_filter_passing_records_at_random_stops_after_sixteen_regions_and_two_hundred_nodes() {
        assert_eq!(regions_read(1), 200, "a node a region: two hundred regions");
        assert_eq!(regions_read(10), 20);
        assert_eq!(regions_read(50), 16, "many a region: sixteen regions");
    }

    #[test]
    fn a_few_whole_clusters_stop_the_search_after_a_hundred_and_sixty_regions_read() {
        // Two kept regions, then regions with no passing node: those count only towards
        // `PATIENCE_READ`, with the nodes read before them.
        let mut patience = Patience::default();
        patience.read(100, false);
        patience.read(100, false);
        let read = (3..)
            .find(|_| {
                patience.read(0, false);
                patience.exhausted()
            })
            .expect("stops");
        assert_eq!(read, PATIENCE_READ);
        let mut patience = Patience::default();
        for _ in 0..1_000 {
            patience.read(0, false);
        }
        assert!(!patience.exhausted(), "no passing node read: the search goes on");
    }

    #[test]
    fn whole_clusters_with_scattered_records_count_a_kept_region_as_sixteen_nodes() {
        let mut patience = Patience::default();
        patience.read(100, false);
        patience.read(100, false);
        for _ in 0..14 {
            patience.read(1, false);
        }
        assert!(
            !patience.exhausted(),
            "two kept regions and fourteen scattered records"
        );
        let more = (1..)
            .find(|_| {
                patience.read(1, false);
                patience.exhausted()
            })
            .expect("stops");
        assert_eq!(more, PATIENCE_READ - 16, "a hundred and sixty regions read");

        // Kept regions among the scattered records bring the end nearer, sixteen nodes each.
        let mut patience = Patience::default();
        let mut read = 0;
        while !patience.exhausted() {
            read += 1;
            patience.read(if read % 10 == 0 { 100 } else { 1 }, false);
        }
        assert_eq!(read, 80, "8 kept regions (128 nodes) and 72 others");
    }

    #[test]
    fn a_query_whose_own_region_passed_whole_stops_after_four_regions_without_change() {
        let mut patience = Patience::default();
        patience.own_region_kept();
        patience.read(100, true);
        for read in 1..=OWN_REGION_PATIENCE {
            assert!(!patience.exhausted(), "{read} regions");
            patience.read(100, false);
        }
        assert!(patience.exhausted());
        // Regions without a passing node do not count, and a change starts the count again with the
        // shorter patience kept.
        let mut patience = Patience::default();
        patience.own_region_kept();
        for _ in 0..OWN_REGION_PATIENCE - 1 {
            patience.read(100, false);
            patience.read(0, false);
        }
        patience.read(30, true);
        for _ in 0..OWN_REGION_PATIENCE - 1 {
            patience.read(1, false);
        }
        assert!(!patience.exhausted());
        patience.read(1, false);
        assert!(patience.exhausted());
    }

    #[test]
    fn a_change_of_the_k_best_starts_the_count_again() {
        let mut patience = Patience::default();
        for _ in 0..199 {
            patience.read(1, false);
        }
        patience.read(1, true);
        for _ in 0..199 {
            patience.read(1, false);
        }
        assert!(!patience.exhausted(), "199 regions since the change");
        patience.read(1, false);
        assert!(patience.exhausted());
    }
}
