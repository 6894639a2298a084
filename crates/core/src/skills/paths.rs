//! Path text as Node's posix `path` and `url.pathToFileURL` write it, so the paths a skill
//! reports (locations, sampled files, the `file://` base) read exactly as the reference's.

pub(crate) use crate::nodepath::{dirname, join, resolve};

/// `url.pathToFileURL(p).href`: the absolute path with every byte outside
/// `A-Z a-z 0-9 ! $ & ' ( ) * + , - . / : ; = @ _` percent-encoded (UTF-8, upper-case hex).
pub(crate) fn file_url(p: &str) -> String {
    let mut resolved = resolve(p);
    // On Windows the path's `\` become `/`, a drive path gets a third slash (`file:///C:/x`) and
    // a UNC path names its server as the URL's host (`file://server/share/x`).
    #[cfg(windows)]
    {
        resolved = resolved.replace('\\', "/");
        if !resolved.starts_with("//") {
            resolved.insert_str(0, "///");
        }
    }
    if p.ends_with(['/', std::path::MAIN_SEPARATOR]) && !resolved.ends_with('/') {
        resolved.push('/');
    }
    let mut out = String::with_capacity(resolved.len() + 7);
    #[cfg(windows)]
    out.push_str("file:");
    #[cfg(not(windows))]
    out.push_str("file://");
    for b in resolved.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"!$&'()*+,-./:;=@_".contains(&b);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodepath::normalize;

    #[test]
    fn normalize_matches_node() {
        assert_eq!(normalize(""), ".");
        assert_eq!(normalize("./a/"), "a/");
        assert_eq!(normalize("a//b/../c"), "a/c");
        assert_eq!(normalize("/../x"), "/x");
        assert_eq!(normalize("../../x"), "../../x");
        assert_eq!(normalize("a/.."), ".");
        assert_eq!(normalize("/"), "/");
        assert_eq!(join("./a/", "b"), "a/b");
        assert_eq!(join("", "x"), "x");
        assert_eq!(join(".", "SKILL.md"), "SKILL.md");
        assert_eq!(join("examples/skills", "hello-world"), "examples/skills/hello-world");
    }

    #[test]
    fn dirname_matches_node() {
        assert_eq!(dirname("a/b/SKILL.md"), "a/b");
        assert_eq!(dirname("SKILL.md"), ".");
        assert_eq!(dirname("/SKILL.md"), "/");
        assert_eq!(dirname("/a/"), "/");
        assert_eq!(dirname(""), ".");
    }

    #[test]
    fn file_urls_encode_like_path_to_file_url() {
        assert_eq!(file_url("/"), "file:///");
        assert_eq!(file_url("/tmp/a/../b/./c"), "file:///tmp/b/c");
        assert_eq!(file_url("/tmp/x/"), "file:///tmp/x/");
        let all: String = (1u8..128).map(char::from).collect();
        let got = file_url(&format!("/t/a{all}z/é😀\u{a0}"));
        let want = "file:///t/a%01%02%03%04%05%06%07%08%09%0A%0B%0C%0D%0E%0F%10%11%12%13%14%15%16%17%18%19%1A%1B%1C%1D%1E%1F%20!%22%23$%25&'()*+,-./0123456789:;%3C=%3E%3F@ABCDEFGHIJKLMNOPQRSTUVWXYZ%5B%5C%5D%5E_%60abcdefghijklmnopqrstuvwxyz%7B%7C%7D%7E%7Fz/%C3%A9%F0%9F%98%80%C2%A0";
        assert_eq!(got, want);
        let rel = file_url("rel/dir");
        let cwd = std::env::current_dir().unwrap();
        assert!(rel.starts_with("file:///") && rel.ends_with("/rel/dir"), "{rel} vs {cwd:?}");
    }
}
