//! Per-search marks over the graph's nodes (visited nodes, filter verdicts), cleared in O(1) by
//! moving to a new generation, so a search costs nothing for the nodes it never reaches.

/// Marks of visited nodes, cleared in O(1) by moving to a new generation.
#[derive(Debug, Default)]
pub(super) struct Visited {
    marks: Vec<u32>,
    generation: u32,
}

/// Starts a new generation of `marks` covering `size` nodes: marks of older generations no longer count.
/// Once `generation` reaches `last`, the marks are cleared and counting restarts at 1.
fn next_generation(marks: &mut Vec<u32>, generation: &mut u32, size: usize, last: u32) {
    if marks.len() < size {
        crate::huge::reserve(marks, size - marks.len());
        marks.resize(size, 0);
    }
    if *generation >= last {
        marks.iter_mut().for_each(|m| *m = 0);
        *generation = 1;
    } else {
        *generation += 1;
    }
}

impl Visited {
    /// Starts a new search over `size` nodes.
    pub(super) fn reset(&mut self, size: usize) {
        next_generation(&mut self.marks, &mut self.generation, size, u32::MAX);
    }

    /// Marks `node`; whether this is its first visit in this search.
    #[inline]
    pub(super) fn first_visit(&mut self, node: u32) -> bool {
        let mark = &mut self.marks[node as usize];
        if *mark == self.generation {
            false
        } else {
            *mark = self.generation;
            true
        }
    }
}

/// Filter verdicts for one search, so a node reached many times is judged once (a metadata filter
/// costs far more than the lookup).
#[derive(Debug, Default)]
pub(super) struct Verdicts {
    /// `generation << 1 | passed` where judged in this search.
    marks: Vec<u32>,
    generation: u32,
}

impl Verdicts {
    pub(super) fn reset(&mut self, size: usize) {
        // A mark holds the generation shifted left by one, so generations stay below 2^31.
        next_generation(&mut self.marks, &mut self.generation, size, (1 << 31) - 1);
    }

    #[inline]
    pub(super) fn judge(&mut self, node: u32, accept: impl Fn(u32) -> bool) -> bool {
        let mark = &mut self.marks[node as usize];
        if *mark >> 1 == self.generation {
            return *mark & 1 == 1;
        }
        let passed = accept(node);
        *mark = (self.generation << 1) | u32::from(passed);
        passed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_from_before_a_generation_wraps_do_not_count() {
        let mut visited = Visited::default();
        visited.reset(4);
        visited.generation = u32::MAX;
        assert!(visited.first_visit(2));
        assert!(!visited.first_visit(2));
        visited.reset(4);
        assert_eq!(visited.generation, 1);
        assert!(visited.first_visit(2), "cleared when the generation wrapped");

        let mut verdicts = Verdicts::default();
        verdicts.reset(4);
        verdicts.generation = (1 << 31) - 1;
        assert!(verdicts.judge(1, |_| true));
        verdicts.reset(4);
        assert_eq!(verdicts.generation, 1);
        assert!(!verdicts.judge(1, |_| false), "judged afresh after the wrap");
    }
}
