//! The page contents the ZswapPageout workers write and verify.
//!
//! Every page must be (a) unique, so a page swapped in at the wrong address is
//! caught, (b) very compressible, so lzo stores it cheaply as in the seed's
//! reproducer, and (c) *not* same-filled: zswap in 6.12 stores a page made of
//! one repeated machine word without compressing it, which would bypass the
//! code under test. So a page is its index in word 0, then two different
//! words derived from the index, alternating (a 16-byte period) to the end.
//!
//! Compressibility is adjustable: with `random_percent` > 0, that share of
//! each page's words (words 1..=k) holds pseudo-random data instead, derived
//! from the page index and the word position (splitmix64), so it is still
//! unique and verifiable but does not compress.

/// The two alternating words of page `index`: `(even, odd)` by word position.
/// Bytes 8..16 of the page (word 1) are the `odd` word, so the byte at page
/// offset `j >= 8` is `b + (j % 16)`.
fn pattern_pair(index: u64) -> (u64, u64) {
    let base = index as u8;
    let bytes = |first: u8| -> u64 {
        let mut b = [0u8; 8];
        for (k, byte) in b.iter_mut().enumerate() {
            *byte = base.wrapping_add(first).wrapping_add(k as u8);
        }
        u64::from_le_bytes(b)
    };
    (bytes(0), bytes(8))
}

/// Fills one page (as machine words) with its pattern.
pub fn fill_page(index: u64, page: &mut [u64]) {
    fill_page_mixed(index, page, 0);
}

/// How many words of a page of `words` words are random at `random_percent`
/// (word 0, the index, never is).
pub fn random_words(words: usize, random_percent: u8) -> usize {
    (words * usize::from(random_percent.min(100)) / 100).min(words.saturating_sub(1))
}

/// splitmix64: a fixed, fast mix of the page index and word position.
fn mix(index: u64, word: usize) -> u64 {
    let mut z = index
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(word as u64)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value of word `word` of page `index` whose words 1..=`random` are random.
fn word_value(index: u64, word: usize, random: usize, (even, odd): (u64, u64)) -> u64 {
    match word {
        0 => index,
        w if w <= random => mix(index, w),
        w if w % 2 == 0 => even,
        _ => odd,
    }
}

/// Fills one page with its pattern, words 1..=`random` of it random.
pub fn fill_page_mixed(index: u64, page: &mut [u64], random: usize) {
    let pair = pattern_pair(index);
    for (word, slot) in page.iter_mut().enumerate() {
        *slot = word_value(index, word, random, pair);
    }
}

/// The first word of a page that differs from its pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mismatch {
    pub word: usize,
    pub expected: u64,
    pub found: u64,
}

/// Checks one page against its pattern.
#[cfg(test)]
pub fn check_page(index: u64, page: &[u64]) -> Result<(), Mismatch> {
    check_page_mixed(index, page, 0)
}

/// Checks one page filled by [`fill_page_mixed`] with the same `random`.
pub fn check_page_mixed(index: u64, page: &[u64], random: usize) -> Result<(), Mismatch> {
    let pair = pattern_pair(index);
    for (word, &found) in page.iter().enumerate() {
        let expected = word_value(index, word, random, pair);
        if found != expected {
            return Err(Mismatch {
                word,
                expected,
                found,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORDS: usize = 4096 / 8;

    fn expected_word(index: u64, word: usize) -> u64 {
        let (even, odd) = pattern_pair(index);
        match word {
            0 => index,
            w if w % 2 == 0 => even,
            _ => odd,
        }
    }

    fn page(index: u64) -> Vec<u64> {
        let mut p = vec![0; WORDS];
        fill_page(index, &mut p);
        p
    }

    /// What zswap's same-filled check looks for: one word repeated.
    fn is_same_filled(page: &[u64]) -> bool {
        page.iter().all(|&w| w == page[0])
    }

    #[test]
    fn filled_pages_verify() {
        for index in [0, 1, 255, 256, 8191, u64::MAX] {
            assert_eq!(check_page(index, &page(index)), Ok(()), "page {index}");
        }
    }

    #[test]
    fn no_page_is_same_filled() {
        for index in 0..70_000u64 {
            assert!(!is_same_filled(&page(index)), "page {index}");
        }
        // Even a page whose index equals its pattern words is not same-filled,
        // because the two alternating words always differ.
        let (even, odd) = pattern_pair(0x1234);
        assert_ne!(even, odd);
    }

    #[test]
    fn pages_are_unique() {
        assert_ne!(page(1), page(257));
        assert_ne!(page(0), page(256));
    }

    #[test]
    fn bytes_follow_the_documented_layout() {
        let p = page(0x0102);
        let bytes: Vec<u8> = p.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(&bytes[..8], &0x0102u64.to_le_bytes());
        for (j, &b) in bytes.iter().enumerate().skip(8) {
            assert_eq!(b, 0x02u8.wrapping_add((j % 16) as u8), "byte {j}");
        }
    }

    #[test]
    fn expected_word_agrees_with_fill() {
        let p = page(77);
        for (word, &value) in p.iter().enumerate() {
            assert_eq!(expected_word(77, word), value, "word {word}");
        }
    }

    #[test]
    fn random_words_verify_and_stay_unique() {
        let random = random_words(WORDS, 50);
        assert_eq!(random, 256);
        let mut a = vec![0; WORDS];
        let mut b = vec![0; WORDS];
        fill_page_mixed(5, &mut a, random);
        fill_page_mixed(6, &mut b, random);
        assert_eq!(check_page_mixed(5, &a, random), Ok(()));
        assert_ne!(a[1..=random], b[1..=random]);
        // Past the random words, the compressible pattern goes on.
        assert_eq!(a[random + 1], expected_word(5, random + 1));
        // 100% leaves the index word alone; 0% is the plain pattern.
        assert_eq!(random_words(WORDS, 100), WORDS - 1);
        assert_eq!(random_words(WORDS, 0), 0);
        fill_page_mixed(7, &mut a, 0);
        assert_eq!(a, page(7));
        let m = check_page_mixed(5, &b, random).unwrap_err();
        assert_eq!(m.word, 0);
    }

    #[test]
    fn check_names_the_first_bad_word() {
        let mut p = page(9);
        p[300] ^= 1;
        p[400] ^= 1;
        let m = check_page(9, &p).unwrap_err();
        assert_eq!(m.word, 300);
        assert_eq!(m.expected, expected_word(9, 300));
        assert_eq!(m.found, expected_word(9, 300) ^ 1);

        let swapped = page(10);
        assert_eq!(check_page(9, &swapped).unwrap_err().word, 0);
    }
}
