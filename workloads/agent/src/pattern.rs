//! The page contents the ZswapPageout workers write and verify.
//!
//! Every page must be (a) unique, so a page swapped in at the wrong address is
//! caught, (b) very compressible, so lzo stores it cheaply as in the seed's
//! reproducer, and (c) *not* same-filled: zswap in 6.12 stores a page made of
//! one repeated machine word without compressing it, which would bypass the
//! code under test. So a page is its index in word 0, then two different
//! words derived from the index, alternating (a 16-byte period) to the end.

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
    let (even, odd) = pattern_pair(index);
    for (word, slot) in page.iter_mut().enumerate() {
        *slot = if word == 0 {
            index
        } else if word % 2 == 0 {
            even
        } else {
            odd
        };
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
pub fn check_page(index: u64, page: &[u64]) -> Result<(), Mismatch> {
    let (even, odd) = pattern_pair(index);
    let Some((&first, rest)) = page.split_first() else {
        return Ok(());
    };
    if first != index {
        return Err(Mismatch {
            word: 0,
            expected: index,
            found: first,
        });
    }
    // Word pairs (1, 2), (3, 4), ...: odd position first.
    for (pair, chunk) in rest.chunks(2).enumerate() {
        for (k, (&found, expected)) in chunk.iter().zip([odd, even]).enumerate() {
            if found != expected {
                return Err(Mismatch {
                    word: 1 + 2 * pair + k,
                    expected,
                    found,
                });
            }
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
