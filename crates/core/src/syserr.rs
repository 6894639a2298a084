//! Node's system errors: the code and text libuv gives an errno, the message Node's `fs` and
//! `net` calls fail with (`CODE: description, syscall 'path'`), and the error itself with the
//! fields Node gives it (`errno`, `code`, `syscall`, `path`).

use std::io;

use serde_json::{Map, Value};

/// Each code the addon reports: Node's description of it, and libuv's number for it on Windows
/// (on Unix the number is the negated errno). As `util.getSystemErrorMap()` gives them.
const CODES: &[(&str, &str, i32)] = &[
    ("ENOENT", "no such file or directory", -4058),
    ("EACCES", "permission denied", -4092),
    ("EPERM", "operation not permitted", -4048),
    ("EISDIR", "illegal operation on a directory", -4068),
    ("ENOTDIR", "not a directory", -4052),
    ("EEXIST", "file already exists", -4075),
    ("ELOOP", "too many symbolic links encountered", -4067),
    ("ENAMETOOLONG", "name too long", -4064),
    ("EMFILE", "too many open files", -4066),
    ("ENFILE", "file table overflow", -4061),
    ("ENOSPC", "no space left on device", -4055),
    ("EROFS", "read-only file system", -4043),
    ("EBUSY", "resource busy or locked", -4082),
    ("EINVAL", "invalid argument", -4071),
    ("EIO", "i/o error", -4070),
    ("ETXTBSY", "text file is busy", -4038),
    ("ENXIO", "no such device or address", -4033),
    ("EFBIG", "file too large", -4036),
    ("ENOTEMPTY", "directory not empty", -4051),
    ("EXDEV", "cross-device link not permitted", -4037),
    ("EAGAIN", "resource temporarily unavailable", -4088),
    ("ENOMEM", "not enough memory", -4057),
    // Unix only: libuv has no such code on Windows.
    ("EDQUOT", "disk quota exceeded", 0),
    ("ENODEV", "no such device", -4059),
    ("EBADF", "bad file descriptor", -4083),
    ("EPIPE", "broken pipe", -4047),
    ("EFTYPE", "inappropriate file type or format", -4028),
    ("ECHARSET", "invalid Unicode character", -4080),
    ("ENOTSUP", "operation not supported on socket", -4049),
    // Sockets.
    ("ECONNREFUSED", "connection refused", -4078),
    ("ECONNRESET", "connection reset by peer", -4077),
    ("ECONNABORTED", "software caused connection abort", -4079),
    ("ETIMEDOUT", "connection timed out", -4039),
    ("EHOSTUNREACH", "host is unreachable", -4073),
    ("ENETUNREACH", "network is unreachable", -4062),
    ("ENETDOWN", "network is down", -4063),
    ("EHOSTDOWN", "host is down", -4031),
    ("EADDRNOTAVAIL", "address not available", -4090),
    ("EADDRINUSE", "address already in use", -4091),
    ("EAFNOSUPPORT", "address family not supported", -4089),
    ("ENOBUFS", "no buffer space available", -4060),
    ("ENOTCONN", "socket is not connected", -4053),
    ("ENOTSOCK", "socket operation on non-socket", -4050),
];

/// Node's description of a code, and libuv's Windows number for it.
fn describe(code: &str) -> Option<(&'static str, &'static str, i32)> {
    CODES.iter().find(|(c, _, _)| *c == code).copied()
}

/// The code libuv gives a Unix errno.
#[cfg(unix)]
fn os_code(errno: i32) -> Option<&'static str> {
    let table: &[(i32, &str)] = &[
        (libc::ENOENT, "ENOENT"),
        (libc::EACCES, "EACCES"),
        (libc::EPERM, "EPERM"),
        (libc::EISDIR, "EISDIR"),
        (libc::ENOTDIR, "ENOTDIR"),
        (libc::EEXIST, "EEXIST"),
        (libc::ELOOP, "ELOOP"),
        (libc::ENAMETOOLONG, "ENAMETOOLONG"),
        (libc::EMFILE, "EMFILE"),
        (libc::ENFILE, "ENFILE"),
        (libc::ENOSPC, "ENOSPC"),
        (libc::EROFS, "EROFS"),
        (libc::EBUSY, "EBUSY"),
        (libc::EINVAL, "EINVAL"),
        (libc::EIO, "EIO"),
        (libc::ETXTBSY, "ETXTBSY"),
        (libc::ENXIO, "ENXIO"),
        (libc::EFBIG, "EFBIG"),
        (libc::ENOTEMPTY, "ENOTEMPTY"),
        (libc::EXDEV, "EXDEV"),
        (libc::EAGAIN, "EAGAIN"),
        (libc::ENOMEM, "ENOMEM"),
        (libc::EDQUOT, "EDQUOT"),
        (libc::ENODEV, "ENODEV"),
    ];
    table.iter().find(|(n, _)| *n == errno).map(|(_, c)| *c)
}

#[cfg(windows)]
fn os_code(error: i32) -> Option<&'static str> {
    windows_code(error)
}

/// The code libuv gives a Windows system error (`GetLastError`), as its `uv_translate_sys_error`
/// maps the ones a file, a directory or a process can fail with. Compiled everywhere so its
/// tests run on every platform.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn windows_code(error: i32) -> Option<&'static str> {
    Some(match error {
        // FILE_NOT_FOUND, PATH_NOT_FOUND, INVALID_DRIVE, INVALID_NAME, BAD_PATHNAME,
        // MOD_NOT_FOUND, BAD_NETPATH, BAD_NET_NAME, INVALID_REPARSE_DATA, ENVVAR_NOT_FOUND
        2 | 3 | 15 | 123 | 161 | 126 | 53 | 67 | 4392 | 203 => "ENOENT",
        // ACCESS_DENIED, PRIVILEGE_NOT_HELD
        5 | 1314 => "EPERM",
        // NOACCESS, ELEVATION_REQUIRED, CANT_ACCESS_FILE
        998 | 740 | 1920 => "EACCES",
        // SHARING_VIOLATION, LOCK_VIOLATION, BUSY, PATH_BUSY, BUSY_DRIVE
        32 | 33 | 170 | 148 | 142 => "EBUSY",
        // FILE_EXISTS, ALREADY_EXISTS
        80 | 183 => "EEXIST",
        // DIR_NOT_EMPTY
        145 => "ENOTEMPTY",
        // DIRECTORY (the name is not a directory's)
        267 => "ENOTDIR",
        // INVALID_FUNCTION (reading a directory), DIRECTORY_NOT_SUPPORTED
        1 | 336 => "EISDIR",
        // FILENAME_EXCED_RANGE, BUFFER_OVERFLOW
        206 | 111 => "ENAMETOOLONG",
        // TOO_MANY_OPEN_FILES
        4 => "EMFILE",
        // DISK_FULL, HANDLE_DISK_FULL
        112 | 39 => "ENOSPC",
        // WRITE_PROTECT
        19 => "EROFS",
        // NOT_ENOUGH_MEMORY, OUTOFMEMORY
        8 | 14 => "ENOMEM",
        // INVALID_PARAMETER, INVALID_FLAGS, NEGATIVE_SEEK, INVALID_DATA
        87 | 1004 | 131 | 13 => "EINVAL",
        // INVALID_HANDLE
        6 => "EBADF",
        // NOT_SAME_DEVICE
        17 => "EXDEV",
        // CANT_RESOLVE_FILENAME
        1921 => "ELOOP",
        // NO_DATA, BROKEN_PIPE on a write
        232 | 109 => "EPIPE",
        // NOT_SUPPORTED
        50 => "ENOTSUP",
        // BAD_EXE_FORMAT
        193 => "EFTYPE",
        // NO_UNICODE_TRANSLATION
        1113 => "ECHARSET",
        // CRC, GEN_FAILURE, IO_DEVICE, and the other device failures
        23 | 31 | 1117 => "EIO",
        _ => return None,
    })
}

/// The code and libuv number Node gives a socket error on Windows (a Winsock `WSAE…` code or the
/// system error a completed socket operation reports), as `uv_translate_sys_error` maps them; the
/// number is the code's in [`CODES`]. Compiled everywhere so its tests run on every platform.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn windows_net_code(error: i32) -> Option<(&'static str, i64)> {
    let code = match error {
        // WSAECONNREFUSED, ERROR_CONNECTION_REFUSED
        10061 | 1225 => "ECONNREFUSED",
        // WSAECONNRESET, ERROR_NETNAME_DELETED
        10054 | 64 => "ECONNRESET",
        // WSAECONNABORTED, ERROR_CONNECTION_ABORTED
        10053 | 1236 => "ECONNABORTED",
        // WSAETIMEDOUT, ERROR_SEM_TIMEOUT
        10060 | 121 => "ETIMEDOUT",
        // WSAEHOSTUNREACH, ERROR_HOST_UNREACHABLE
        10065 | 1232 => "EHOSTUNREACH",
        // WSAENETUNREACH, ERROR_NETWORK_UNREACHABLE
        10051 | 1231 => "ENETUNREACH",
        10050 => "ENETDOWN",
        10064 => "EHOSTDOWN",
        // WSAESHUTDOWN: a send after the socket's sending side was shut
        10058 => "EPIPE",
        10049 => "EADDRNOTAVAIL",
        10048 => "EADDRINUSE",
        10047 => "EAFNOSUPPORT",
        10013 => "EACCES",
        10024 => "EMFILE",
        10055 => "ENOBUFS",
        10022 => "EINVAL",
        10057 => "ENOTCONN",
        10038 => "ENOTSOCK",
        _ => return None,
    };
    describe(code).map(|(c, _, n)| (c, i64::from(n)))
}

/// The code and description libuv gives a raw OS error of this platform (an errno on Unix, a
/// system error code on Windows).
pub(crate) fn uv_name(raw: i32) -> Option<(&'static str, &'static str)> {
    os_code(raw).and_then(describe).map(|(c, d, _)| (c, d))
}

/// libuv's number for a code, for an error that came with none: the code's number on Windows, the
/// negated errno on Unix.
fn kind_errno(code: &str) -> i32 {
    #[cfg(windows)]
    {
        describe(code).map_or(0, |(_, _, n)| n)
    }
    #[cfg(unix)]
    {
        match code {
            "ENOENT" => -libc::ENOENT,
            "EACCES" => -libc::EACCES,
            "EEXIST" => -libc::EEXIST,
            _ => 0,
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = code;
        0
    }
}

/// libuv's number for a raw OS error: the negated errno on Unix, libuv's own on Windows.
fn uv_errno(raw: i32) -> i32 {
    #[cfg(windows)]
    {
        os_code(raw).and_then(describe).map_or(-4094, |(_, _, n)| n)
    }
    #[cfg(not(windows))]
    {
        -raw
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
        // An error the standard library made itself (no OS number): named by its kind, in Node's words.
        None => {
            let code = error_code(e);
            let desc = describe(&code).map_or_else(|| e.to_string(), |(_, d, _)| d.to_string());
            (code, desc)
        }
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
    /// libuv's number: the negated errno on Unix (`-2` for ENOENT), libuv's own on Windows
    /// (`-4058` for ENOENT).
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
            errno: e.raw_os_error().map_or_else(|| kind_errno(&error_code(e)), uv_errno),
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
    fn windows_socket_errors_read_as_node_on_windows_names_them() {
        assert_eq!(windows_net_code(10061), Some(("ECONNREFUSED", -4078)));
        assert_eq!(windows_net_code(1225), Some(("ECONNREFUSED", -4078)));
        assert_eq!(windows_net_code(10054), Some(("ECONNRESET", -4077)));
        assert_eq!(windows_net_code(10060), Some(("ETIMEDOUT", -4039)));
        assert_eq!(windows_net_code(10065), Some(("EHOSTUNREACH", -4073)));
        assert_eq!(windows_net_code(10048), Some(("EADDRINUSE", -4091)));
        assert_eq!(windows_net_code(2), None);
    }

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

    #[test]
    fn an_error_without_an_os_number_reads_as_node_words_its_code() {
        let e = std::io::Error::from(std::io::ErrorKind::NotFound);
        let s = SystemError::fs(&e, "mkdir", Some(""));
        assert_eq!(s.message, "ENOENT: no such file or directory, mkdir ''");
        assert_eq!(s.errno, if cfg!(windows) { -4058 } else { -2 });
    }

    #[test]
    fn windows_errors_read_as_node_names_them_there() {
        let named = |e: i32| windows_code(e).and_then(describe);
        assert_eq!(named(2), Some(("ENOENT", "no such file or directory", -4058)));
        assert_eq!(named(3), Some(("ENOENT", "no such file or directory", -4058)));
        assert_eq!(named(5), Some(("EPERM", "operation not permitted", -4048)));
        assert_eq!(named(32), Some(("EBUSY", "resource busy or locked", -4082)));
        assert_eq!(named(183), Some(("EEXIST", "file already exists", -4075)));
        assert_eq!(named(145), Some(("ENOTEMPTY", "directory not empty", -4051)));
        assert_eq!(named(1), Some(("EISDIR", "illegal operation on a directory", -4068)));
        assert_eq!(named(267), Some(("ENOTDIR", "not a directory", -4052)));
        assert_eq!(named(998), Some(("EACCES", "permission denied", -4092)));
        assert_eq!(named(424_242), None);
        // Every code the table can name has a description.
        for e in 0..20_000 {
            if let Some(c) = windows_code(e) {
                assert!(describe(c).is_some(), "{c}");
            }
        }
    }
}
