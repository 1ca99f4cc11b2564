//! The 3-way fallback, as `git am --3way` does it for one file: find the
//! patch's preimage blob (its `index <pre>..<post>` line) in the repository,
//! apply the hunks to it exactly, then merge preimage → postimage into the
//! current file with libgit2's file merge. A conflict fails the method.

use git2::{ErrorCode, MergeFileInput, ObjectType, Oid, Repository};

use super::search::{Hunk, Limits, apply_hunks, split_lines};

/// The shortest abbreviation libgit2 looks up.
const MIN_PREFIX: usize = 4;

/// The blob an abbreviated `index` id names, if the repository has exactly
/// one. libgit2 pads the abbreviation with zeros and git2 does not expose
/// its length, so prefixes are tried from the longest down: the first hit
/// matches the real abbreviation too, whatever its length was.
pub(crate) fn find_preimage(repo: &Repository, id: Oid) -> Result<Option<Vec<u8>>, git2::Error> {
    if id.is_zero() {
        return Ok(None);
    }
    let hex = id.to_string();
    let shortest = hex.trim_end_matches('0').len().max(MIN_PREFIX);
    for len in (shortest..=hex.len()).rev() {
        match repo.find_object_by_prefix(&hex[..len], Some(ObjectType::Blob)) {
            Ok(object) => {
                let blob = repo.find_blob(object.id())?;
                return Ok(Some(blob.content().to_vec()));
            }
            Err(e) if e.code() == ErrorCode::NotFound => continue,
            Err(e) if e.code() == ErrorCode::Ambiguous => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// `ours` with the change `hunks` make to `preimage`, or `None` when the
/// hunks do not apply exactly to the preimage or the merge conflicts.
pub(crate) fn merge(
    preimage: &[u8],
    ours: &[u8],
    hunks: &[Hunk],
) -> Result<Option<Vec<u8>>, git2::Error> {
    let Ok((theirs, _)) = apply_hunks(&split_lines(preimage), hunks, Limits::EXACT) else {
        return Ok(None);
    };
    let mut ancestor_input = MergeFileInput::new();
    ancestor_input.content(preimage);
    let mut ours_input = MergeFileInput::new();
    ours_input.content(ours);
    let mut theirs_input = MergeFileInput::new();
    theirs_input.content(&theirs);
    let merged = git2::merge_file(&ancestor_input, &ours_input, &theirs_input, None)?;
    Ok(merged.is_automergeable().then(|| merged.content().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::search::{HunkLine, LineKind};

    fn change_line_3() -> Hunk {
        let line = |kind, text: &str| HunkLine {
            kind,
            text: format!("{text}\n").into_bytes(),
        };
        Hunk {
            old_start: 2,
            old_lines: 3,
            new_start: 2,
            new_lines: 3,
            lines: vec![
                line(LineKind::Context, "2"),
                line(LineKind::Remove, "3"),
                line(LineKind::Add, "three"),
                line(LineKind::Context, "4"),
            ],
        }
    }

    #[test]
    fn a_change_merges_into_a_file_changed_elsewhere() {
        let merged = merge(
            b"1\n2\n3\n4\n5\n6\n7\n",
            b"0\n1\n2\n3\n4\n5\n6\nseven\n",
            &[change_line_3()],
        );
        assert_eq!(
            merged.unwrap().unwrap(),
            b"0\n1\n2\nthree\n4\n5\n6\nseven\n"
        );
    }

    #[test]
    fn a_conflicting_change_is_no_merge() {
        let merged = merge(
            b"1\n2\n3\n4\n5\n",
            b"1\n2\nTHREE\n4\n5\n",
            &[change_line_3()],
        );
        assert_eq!(merged.unwrap(), None);
    }

    #[test]
    fn abbreviated_ids_find_their_blob_at_any_length() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let id = repo.blob(b"preimage\n").unwrap();
        let hex = id.to_string();
        for len in [7, 12, 40] {
            let padded = format!("{:0<40}", &hex[..len]);
            let found = find_preimage(&repo, Oid::from_str(&padded).unwrap()).unwrap();
            assert_eq!(found.as_deref(), Some(&b"preimage\n"[..]), "{len}");
        }
        let absent = Oid::from_str("abcdef1000000000000000000000000000000000").unwrap();
        assert_eq!(find_preimage(&repo, absent).unwrap(), None);
    }
}
