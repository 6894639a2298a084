//! Node's system errors: the code and text libuv gives an errno, the message Node's `fs` and
//! `net` calls fail with (`CODE: description, syscall 'path'`), and the error itself with the
//! fields Node gives it (`errno`, `code`, `syscall`, `path`).

use std::io;

use serde_json::{Map, Value};

/// The code and description libuv gives an errno.
pub(crate) fn uv_name(errno: i32) -> Option<(&'static str, &'static str)> {
    #[cfg(unix)]
    {
        let table: &[(i32, &str, &str)] = &[
            (libc::ENOENT, "ENOENT", "no such file or directory"),
            (libc::EACCES, "EACCES", "permission denied"),
            (libc::EPERM, "EPERM", "operation not permitted"),
            (libc::EISDIR, "EISDIR", "illegal operation on a directory"),
            (libc::ENOTDIR, "ENOTDIR", "not a directory"),
            (libc::EEXIST, "EEXIST", "file already exists"),
            (libc::ELOOP, "ELOOP", "too many symbolic links encountered"),
            (libc::ENAMETOOLONG, "ENAMETOOLONG", "name too long"),
            (libc::EMFILE, "EMFILE", "too many open files"),
            (libc::ENFILE, "ENFILE", "file table overflow"),
            (libc::ENOSPC, "ENOSPC", "no space left on device"),
            (libc::EROFS, "EROFS", "read-only file system"),
            (libc::EBUSY, "EBUSY", "resource busy or locked"),
            (libc::EINVAL, "EINVAL", "invalid argument"),
            (libc::EIO, "EIO", "i/o error"),
            (libc::ETXTBSY, "ETXTBSY", "text file is busy"),
            (libc::ENXIO, "ENXIO", "no such device or address"),
            (libc::EFBIG, "EFBIG", "file too large"),
            (libc::ENOTEMPTY, "ENOTEMPTY", "directory not empty"),
            (libc::EXDEV, "EXDEV", "cross-device link not permitted"),
            (libc::EAGAIN, "EAGAIN", "resource temporarily unavailable"),
            (libc::ENOMEM, "ENOMEM", "not enough memory"),
            (libc::EDQUOT, "EDQUOT", "disk quota exceeded"),
            (libc::ENODEV, "ENODEV", "no such device"),
        ];
        table.iter().find(|(n, _, _)| *n == errno).map(|(_, c, d)| (*c, *d))
    }
    #[cfg(not(unix))]
    {
        let _ = errno;
        None
    }
}

/// The code (`ENOENT`...) of an I/O error, as Node names it.
pub fn error_code(e: &io::Error) -> String {
    if let Some((code, _)) = e.raw_os_error().and_then(uv_name) {
        return code.into();
    }
    match e.kind() {
        io::ErrorKind::NotFound => "ENOENT".into(),
        io::ErrorKind::PermissionDenied => "EACCES".into(),
        io::ErrorKind::AlreadyExists => "EEXIST".into(),
        _ => "EIO".into(),
    }
}

/// A Node file-system error message: `CODE: description, syscall 'path'` (the path part only
/// when the call had one).
pub fn fs_error(e: &io::Error, syscall: &str, path: Option<&str>) -> String {
    let (code, desc) = match e.raw_os_error().and_then(uv_name) {
        Some((c, d)) => (c.to_string(), d.to_string()),
        None => (error_code(e), e.to_string()),
    };
    match path {
        Some(p) => format!("{code}: {desc}, {syscall} '{p}'"),
        None => format!("{code}: {desc}, {syscall}"),
    }
}

/// A system call that failed, as Node reports it: its message and its own fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemError {
    pub message: String,
    /// libuv's number: the negated errno on Unix (`-2` for ENOENT).
    pub errno: i32,
    pub code: String,
    pub syscall: String,
    pub path: Option<String>,
}

impl SystemError {
    /// A file-system call's failure, named as Node names it.
    pub fn fs(e: &io::Error, syscall: &str, path: Option<&str>) -> SystemError {
        SystemError {
            message: fs_error(e, syscall, path),
            errno: e.raw_os_error().map_or(0, |n| -n),
            code: error_code(e),
            syscall: syscall.into(),
            path: path.map(str::to_owned),
        }
    }

    /// `{ name: "Error", message, fields: { errno, code, syscall, path? } }`, for the host to
    /// make the error from.
    pub fn to_value(&self) -> Value {
        let mut fields = Map::new();
        fields.insert("errno".into(), self.errno.into());
        fields.insert("code".into(), self.code.clone().into());
        fields.insert("syscall".into(), self.syscall.clone().into());
        if let Some(p) = &self.path {
            fields.insert("path".into(), p.clone().into());
        }
        let mut m = Map::new();
        m.insert("name".into(), "Error".into());
        m.insert("message".into(), self.message.clone().into());
        m.insert("fields".into(), Value::Object(fields));
        Value::Object(m)
    }
}

impl std::fmt::Display for SystemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_reads_as_node_says_it() {
        let e = std::fs::read("/definitely/not/here").unwrap_err();
        let s = SystemError::fs(&e, "open", Some("/definitely/not/here"));
        assert_eq!(s.message, "ENOENT: no such file or directory, open '/definitely/not/here'");
        assert_eq!((s.errno, s.code.as_str(), s.syscall.as_str()), (-2, "ENOENT", "open"));
        let v = s.to_value();
        assert_eq!(v["fields"]["path"], "/definitely/not/here");
        assert_eq!(v["name"], "Error");
    }
}
