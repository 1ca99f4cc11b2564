//! Two of sysfs's text formats, read by the agent in the guest and by
//! the host alike: a CPU list (`0-3,5`: the guest's online CPUs, a host
//! core's `thread_siblings_list`) and a choice file (`always [madvise]
//! never`: THP's settings, in the guest and on the host). Pure.

/// Parses a kernel CPU list such as `0-3,5` (`/sys/devices/system/cpu/online`)
/// into the CPU numbers, in order.
pub fn cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let number = |s: &str| {
            s.parse::<u32>()
                .map_err(|_| format!("bad CPU number {s:?} in CPU list {text:?}"))
        };
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi {
                    return Err(format!("descending range {part:?} in CPU list {text:?}"));
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(number(part)?),
        }
    }
    Ok(cpus)
}

/// The selected word of a sysfs choice file such as
/// `always madvise [never]` (THP's `enabled`).
pub fn selected_choice(line: &str) -> Option<&str> {
    let start = line.find('[')?;
    let rest = &line[start + 1..];
    let end = rest.find(']')?;
    Some(&rest[..end])
}

/// What a tunable file says its value is: the bracketed choice of a
/// choice file (`always [madvise] never`), else its text, trimmed.
pub fn setting(text: &str) -> String {
    selected_choice(text).unwrap_or(text.trim()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_choice_finds_the_bracketed_word() {
        assert_eq!(selected_choice("always madvise [never]\n"), Some("never"));
        assert_eq!(selected_choice("[always] madvise never"), Some("always"));
        assert_eq!(selected_choice("always [madvise] never"), Some("madvise"));
        assert_eq!(selected_choice("always madvise never"), None);
        assert_eq!(selected_choice("always [madvise"), None);
    }

    #[test]
    fn cpu_list_reads_ranges_and_singles() {
        let cases: &[(&str, &[u32])] = &[
            ("0\n", &[0]),
            ("0-1\n", &[0, 1]),
            ("0-3,5", &[0, 1, 2, 3, 5]),
            ("2,4-5,7", &[2, 4, 5, 7]),
            ("", &[]),
            ("\n", &[]),
        ];
        for (text, want) in cases {
            assert_eq!(cpu_list(text).unwrap(), *want, "{text:?}");
        }
    }

    #[test]
    fn cpu_list_rejects_garbage() {
        for text in ["a", "0-", "-1", "3-1", "0,,1", "0-1-2"] {
            assert!(cpu_list(text).is_err(), "{text:?} was accepted");
        }
    }
}
