//! A boot's memory layout (`Job::layout`, `protocol.layouts: varied`).
//!
//! Before the workload, PID 1 maps [`SCATTER_PAGES`] anonymous pages,
//! touches each (so each takes a physical page), and gives half of them
//! back one at a time, in an order drawn from the layout number; it holds
//! the other half until the boot ends. The freed pages go back to the
//! allocator scattered between held ones, so they cannot merge, and the
//! next order-0 allocations (the workload's cgroups and their per-CPU
//! statistics, its memory, zswap's pool) take them first: which physical
//! pages, and so which cache sets, those land on differs from one layout
//! to the next, while a layout repeats exactly.
//!
//! 1024 pages (4 MiB): the modeled L2's set index repeats every 64 KiB
//! (16 pages) and the LLC's every 512 KiB (128 pages), so the region spans
//! eight LLC periods and the freed half covers every page colour of both
//! several times over. Half is held so that most freed pages have a held
//! buddy and stay single pages rather than merging back into the blocks
//! they came from, at a cost of 2 MiB of the guest's memory. Chosen from the model's geometry
//! (docs/cost-model.md), not from any result.

use crate::error::{Context, Result};
use crate::sys::{self, Mapping};

/// Pages mapped and touched; half are given back.
pub const SCATTER_PAGES: usize = 1024;

/// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014; the generator Java's
/// `SplittableRandom` uses): a well-mixed stream from any seed in a few
/// lines, which is all a layout draw needs. The agent is a static PID 1
/// binary with two dependencies; a random-number crate would add more
/// code than it saves.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A draw in `0..n`, by Lemire's multiply-shift (a bias of at most
    /// n / 2^64, nothing at these sizes).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// The pages given back, in the order they are given back: the first half
/// of a Fisher-Yates permutation of `0..SCATTER_PAGES` drawn from
/// `layout`.
pub fn freed_pages(layout: u32) -> Vec<usize> {
    let mut rng = SplitMix64(u64::from(layout));
    let mut pages: Vec<usize> = (0..SCATTER_PAGES).collect();
    for i in (1..SCATTER_PAGES).rev() {
        pages.swap(i, rng.below(i + 1));
    }
    pages.truncate(SCATTER_PAGES / 2);
    pages
}

/// Scatter the free pages for `layout`, holding half of the region until
/// the boot ends.
pub fn scatter(layout: u32) -> Result<()> {
    let mut map = Mapping::anonymous(SCATTER_PAGES * sys::page_size())
        .context("mapping the layout's pages")?;
    // Whole 4 KiB pages, whatever the job's THP mode.
    map.advise(libc::MADV_NOHUGEPAGE)
        .context("madvise(MADV_NOHUGEPAGE) on the layout's pages")?;
    let words_per_page = sys::page_size() / 8;
    for (i, page) in map.words_mut().chunks_mut(words_per_page).enumerate() {
        page[0] = i as u64 + 1;
    }
    for page in freed_pages(layout) {
        map.advise_pages(page, 1, libc::MADV_DONTNEED)
            .with_context(|| format!("giving back page {page} of the layout's pages"))?;
    }
    // Held for the rest of the boot: PID 1 never returns from here.
    std::mem::forget(map);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_frees_half_the_pages_in_an_order_all_its_own() {
        let one = freed_pages(1);
        assert_eq!(one.len(), SCATTER_PAGES / 2);
        let mut sorted = one.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), SCATTER_PAGES / 2, "no page freed twice");
        assert!(sorted.iter().all(|&p| p < SCATTER_PAGES));
        // The same layout, the same order; another layout, another order
        // and mostly other pages.
        assert_eq!(freed_pages(1), one);
        let two = freed_pages(2);
        assert_ne!(two, one);
        let shared = two.iter().filter(|p| one.contains(p)).count();
        assert!(shared < SCATTER_PAGES * 3 / 8, "{shared} pages in common");
    }

    #[test]
    fn splitmix64_matches_its_reference_stream() {
        // The reference implementation's first outputs from seed 0
        // (Vigna's splitmix64.c, as in Java's SplittableRandom).
        let mut rng = SplitMix64(0);
        assert_eq!(rng.next(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(rng.next(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn scatter_runs_in_a_plain_process() {
        // Outside the VM: the mapping, the touches and the madvise calls.
        scatter(7).unwrap();
    }
}
