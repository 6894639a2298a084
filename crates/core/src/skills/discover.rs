//! Walking skill roots: the same depth-first order as the reference (a stack of directories,
//! each listed in byte order, directories followed through symlinks, `node_modules` and `.git`
//! skipped, every real directory entered once).

use std::collections::HashSet;
use std::fs;

use super::paths::join;

/// Files under `root` whose name passes `want`, in walk order, stopping once `limit` are found.
/// A `limit` that is not a positive number finds nothing (as `out.length < limit` never holds).
pub(crate) fn walk(root: &str, limit: f64, want: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut stack = vec![root.to_string()];
    let mut seen = HashSet::new();
    let room = |n: usize| (n as f64) < limit;
    while room(out.len()) {
        let Some(dir) = stack.pop() else { break };
        let Ok(listing) = fs::read_dir(&dir) else { continue };
        let mut entries: Vec<fs::DirEntry> = listing.filter_map(Result::ok).collect();
        entries.sort_by(|a, b| a.file_name().as_encoded_bytes().cmp(b.file_name().as_encoded_bytes()));
        for entry in entries {
            if !room(out.len()) {
                break;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let full = join(&dir, &name);
            let Ok(kind) = entry.file_type() else { continue };
            let (mut is_dir, mut is_file) = (kind.is_dir(), kind.is_file());
            if kind.is_symlink() {
                match fs::metadata(&full) {
                    Ok(target) => {
                        is_dir = target.is_dir();
                        is_file = target.is_file();
                    }
                    Err(_) => continue,
                }
            }
            if is_dir {
                if name == "node_modules" || name == ".git" {
                    continue;
                }
                let Ok(real) = fs::canonicalize(&full) else { continue };
                if seen.insert(real) {
                    stack.push(full);
                }
            } else if is_file && want(&name) {
                out.push(full);
            }
        }
    }
    out
}

/// Every `SKILL.md` under a root.
pub(crate) fn skill_files(root: &str) -> Vec<String> {
    walk(root, f64::INFINITY, |name| name == "SKILL.md")
}

/// Up to `limit` files of a skill's directory tree other than `SKILL.md`.
pub(crate) fn sample_siblings(dir: &str, limit: f64) -> Vec<String> {
    walk(dir, limit, |name| name != "SKILL.md")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn touch(root: &Path, rel: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, "x").unwrap();
    }

    fn rel(root: &Path, found: Vec<String>) -> Vec<String> {
        let prefix = format!("{}/", root.to_string_lossy());
        found.into_iter().map(|f| f.strip_prefix(&prefix).unwrap_or(&f).to_string()).collect()
    }

    #[test]
    fn order_is_a_stack_of_sorted_listings() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for f in [
            "b/SKILL.md",
            "a/SKILL.md",
            "a/x/SKILL.md",
            "c/deep/SKILL.md",
            "SKILL.md",
            "node_modules/m/SKILL.md",
            ".git/SKILL.md",
        ] {
            touch(root, f);
        }
        let got = rel(root, skill_files(&root.to_string_lossy()));
        // Files of a directory first, then its subdirectories from the last to the first.
        assert_eq!(got, ["SKILL.md", "c/deep/SKILL.md", "b/SKILL.md", "a/SKILL.md", "a/x/SKILL.md"]);
    }

    #[test]
    fn sampling_caps_and_skips_skill_md() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for f in ["SKILL.md", "a.txt", "b.txt", "scripts/run.sh", "scripts/SKILL.md", "z/1", "z/2"] {
            touch(root, f);
        }
        let dir = root.to_string_lossy().into_owned();
        assert_eq!(rel(root, sample_siblings(&dir, 10.0)), ["a.txt", "b.txt", "z/1", "z/2", "scripts/run.sh"]);
        assert_eq!(rel(root, sample_siblings(&dir, 3.0)), ["a.txt", "b.txt", "z/1"]);
        assert_eq!(rel(root, sample_siblings(&dir, 2.5)), ["a.txt", "b.txt", "z/1"]);
        assert!(sample_siblings(&dir, -5.0).is_empty());
        assert!(sample_siblings(&dir, f64::NAN).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed_once_and_cycles_end() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let outside = tmp.path().join("outside");
        touch(&outside, "linked/SKILL.md");
        fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("ext")).unwrap();
        std::os::unix::fs::symlink(&root, outside.join("back")).unwrap();
        std::os::unix::fs::symlink(outside.join("linked/SKILL.md"), root.join("SKILL.md")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("missing"), root.join("dangling")).unwrap();
        let got = rel(&root, skill_files(&root.to_string_lossy()));
        // root/SKILL.md (a link to a file), then ext/ (a link to a directory), and through
        // ext/back the root once more (the root itself is never marked as seen).
        assert_eq!(got, ["SKILL.md", "ext/linked/SKILL.md", "ext/back/SKILL.md"]);
    }

    #[test]
    fn a_missing_root_yields_nothing() {
        assert!(skill_files("/definitely/not/here").is_empty());
    }
}
