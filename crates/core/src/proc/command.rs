//! Which file a command names, and the command line that starts it (see the module above).
//!
//! The rules are plain functions over text (paths, environment values, a file test), compiled on
//! every platform so their tests run everywhere; [`for_platform`] applies them on Windows only.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::nodepath::win32;

/// What `PATHEXT` is taken to be when it is not set.
const DEFAULT_PATHEXT: &str = ".EXE;.CMD;.BAT;.COM";

/// How to start a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// Start `program` with the arguments as given (the platform quotes them).
    Direct { program: PathBuf, args: Vec<String> },
    /// Start the command interpreter `shell` with this exact command line (`/d /s /c "..."`),
    /// not quoted again.
    Shell { shell: String, line: String },
}

/// The characters `cmd.exe` gives a meaning to outside quotes, escaped with `^` (`%` is not
/// among them: a caret does not stop `%VAR%` from expanding, see [`escape_percent`]).
fn is_meta(c: char) -> bool {
    matches!(c, '(' | ')' | '[' | ']' | '!' | '^' | '"' | '`' | '<' | '>' | '&' | '|' | ';' | ',' | ' ' | '*' | '?')
}

fn escape_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if is_meta(c) {
            out.push('^');
        }
        out.push(c);
    }
    out
}

/// `cmd.exe` expands `%VAR%` even inside quotes and after a caret; each `%` becomes
/// `%%cd:~,%` (an empty slice of the `%cd%` variable, which breaks any name it is part of).
fn escape_percent(s: &str) -> String {
    s.replace('%', "%%cd:~,%")
}

/// An argument quoted for a program's own parser (the Microsoft C runtime's rules): a run of
/// backslashes before a quote, or before the closing quote, is doubled, and a quote is written
/// `escaped_quote`.
fn quote(arg: &str, escaped_quote: &str) -> String {
    let mut quoted = String::with_capacity(arg.len() + 2);
    quoted.push('"');
    let mut backslashes = 0usize;
    for c in arg.chars() {
        match c {
            '\\' => {
                backslashes += 1;
                continue;
            }
            '"' => {
                quoted.extend(std::iter::repeat_n('\\', backslashes * 2));
                quoted.push_str(escaped_quote);
            }
            _ => {
                quoted.extend(std::iter::repeat_n('\\', backslashes));
                quoted.push(c);
            }
        }
        backslashes = 0;
    }
    quoted.extend(std::iter::repeat_n('\\', backslashes * 2));
    quoted.push('"');
    quoted
}

/// One argument for a program `cmd.exe` starts: quoted, then its meta characters escaped with
/// `^` and its `%` broken.
pub fn quote_argument(arg: &str) -> String {
    escape_percent(&escape_meta(&quote(arg, "\\\"")))
}

/// One argument for a batch file, which reads its arguments a second time (`%*`, `"%~1"`): only
/// quotes keep meta characters literal through both readings, so a quote inside is doubled and
/// nothing is escaped with `^` (the rule Rust's standard library follows since BatBadBut).
pub fn quote_batch_argument(arg: &str) -> String {
    escape_percent(&quote(arg, "\"\""))
}

/// What `cmd.exe` cannot be given: a line break ends its command, and nothing escapes one.
pub const LINE_BREAK: &str = "The command and its arguments cannot contain line breaks when executed through cmd.exe";

/// Whether Windows starts this file itself (`.exe`, `.com`); anything else goes through `cmd.exe`.
fn is_executable(file: &str) -> bool {
    let lower = file.to_ascii_lowercase();
    lower.ends_with(".exe") || lower.ends_with(".com")
}

/// Whether a file is a batch file (`.bat`, `.cmd`, trailing dots and spaces aside, which Windows
/// ignores in a name).
fn is_batch(file: &str) -> bool {
    let lower = file.trim_end_matches(|c: char| c == '.' || c.is_whitespace()).to_ascii_lowercase();
    lower.ends_with(".bat") || lower.ends_with(".cmd")
}

/// The file a command names, looked up as Windows users' tools do: a name with a separator is
/// taken relative to `cwd`; a bare name is looked for in `cwd`, then in each `PATH` folder, with
/// each `PATHEXT` extension (the name as given first, when it has a dot). Only a file whose
/// extension `PATHEXT` lists counts. `exists` tells whether a path is a file.
pub fn resolve(
    command: &str,
    cwd: &str,
    path_var: Option<&str>,
    pathext_var: Option<&str>,
    exists: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let exts: Vec<String> = pathext_var
        .filter(|v| !v.is_empty())
        .unwrap_or(DEFAULT_PATHEXT)
        .split(';')
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect();
    let mut tries: Vec<&str> = exts.iter().map(String::as_str).collect();
    if command.contains('.') {
        tries.insert(0, "");
    }
    let listed = |file: &str| {
        let lower = file.to_ascii_lowercase();
        exts.iter().any(|e| lower.ends_with(&e.to_ascii_lowercase()))
    };
    let dirs: Vec<String> = if command.contains(['/', '\\']) {
        vec![String::new()]
    } else {
        let mut d = vec![cwd.to_string()];
        d.extend(path_var.unwrap_or("").split(';').filter(|p| !p.is_empty()).map(|p| p.trim_matches('"').to_string()));
        d
    };
    for dir in dirs {
        let base = win32::resolve_from(cwd, &win32::join(&dir, command));
        for ext in &tries {
            let candidate = format!("{base}{ext}");
            if listed(&candidate) && exists(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// How to start a command with `args` on Windows, once [`resolve`] has found `file`: an
/// `.exe`/`.com` directly, anything else through `shell` (`%ComSpec%`) with the line
/// `/d /e:on /v:off /s /c "<file> <args>"`, every part quoted and escaped (command extensions on,
/// for the `%cd:~,%` that breaks `%`; delayed expansion off, so `!VAR!` is text). A line break in
/// any part is refused: `cmd.exe` would end the command there.
pub fn launch(file: &str, args: &[String], shell: &str) -> Result<Launch, String> {
    if is_executable(file) {
        return Ok(Launch::Direct { program: PathBuf::from(file), args: args.to_vec() });
    }
    if std::iter::once(file).chain(args.iter().map(String::as_str)).any(|a| a.contains(['\r', '\n'])) {
        return Err(LINE_BREAK.into());
    }
    let mut parts = vec![format!("\"{}\"", escape_percent(&win32::normalize(file)))];
    if is_batch(file) {
        parts.extend(args.iter().map(|a| quote_batch_argument(a)));
    } else {
        parts.extend(args.iter().map(|a| quote_argument(a)));
    }
    Ok(Launch::Shell { shell: shell.to_string(), line: format!("/d /e:on /v:off /s /c \"{}\"", parts.join(" ")) })
}

/// How to start `program` with `args` on this platform, with the child's environment overrides `env`
/// and working directory `cwd` (both as the spawn will set them). Off Windows, and for a
/// command Windows cannot find, the program as given: starting it reports what is wrong.
pub fn for_platform(
    program: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&Path>,
) -> Result<Launch, String> {
    if !cfg!(windows) {
        return Ok(Launch::Direct { program: PathBuf::from(program), args: args.to_vec() });
    }
    // Windows names hold no quotes, and cmd.exe drops them from a command's name.
    let program = &program.replace('"', "");
    // The child's variables: an override wins over the process's own, names compared as
    // Windows compares them.
    let var = |name: &str| -> Option<String> {
        env.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone()).or_else(|| {
            std::env::vars_os()
                .filter(|(k, _)| k.to_string_lossy().eq_ignore_ascii_case(name))
                .map(|(_, v): (OsString, OsString)| v.to_string_lossy().into_owned())
                .last()
        })
    };
    let here = match cwd {
        Some(dir) => dir.to_string_lossy().into_owned(),
        None => crate::nodepath::cwd(),
    };
    let here = win32::resolve_from(&crate::nodepath::cwd(), &here);
    let is_file = |p: &str| Path::new(p).is_file();
    match resolve(program, &here, var("PATH").as_deref(), var("PATHEXT").as_deref(), &is_file) {
        Some(file) => launch(&file, args, &var("ComSpec").unwrap_or_else(|| "cmd.exe".into())),
        None => Ok(Launch::Direct { program: PathBuf::from(program), args: args.to_vec() }),
    }
}

/// A command ready to spawn for a [`Launch`].
pub fn command(launch: &Launch) -> tokio::process::Command {
    match launch {
        Launch::Direct { program, args } => {
            let mut c = tokio::process::Command::new(program);
            c.args(args);
            c
        }
        Launch::Shell { shell, line } => {
            let mut c = tokio::process::Command::new(shell);
            #[cfg(windows)]
            c.raw_arg(line);
            #[cfg(not(windows))]
            c.arg(line);
            c
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The arguments as cross-spawn 7.1 (the MCP SDK's spawner, which the reference uses) escapes
    // them, taken from it: for a program through cmd.exe, and for a batch file.
    #[test]
    fn arguments_are_escaped_as_cross_spawn_does() {
        let rows = [
            ("plain", r#"^"plain^""#, r#""plain""#),
            ("two words", r#"^"two^ words^""#, r#""two words""#),
            ("a\"b", r#"^"a\^"b^""#, r#""a""b""#),
            ("&calc", r#"^"^&calc^""#, r#""&calc""#),
            ("%PATH%", r#"^"%%cd:~,%PATH%%cd:~,%^""#, r#""%%cd:~,%PATH%%cd:~,%""#),
            ("^", r#"^"^^^""#, r#""^""#),
            ("x|y", r#"^"x^|y^""#, r#""x|y""#),
            ("!x!", r#"^"^!x^!^""#, r#""!x!""#),
            ("", r#"^"^""#, r#""""#),
            (r"C:\dir\", r#"^"C:\dir\\^""#, r#""C:\dir\\""#),
            (r#"a\\"b"#, r#"^"a\\\\\^"b^""#, r#""a\\\\""b""#),
            (r"end\\", r#"^"end\\\\^""#, r#""end\\\\""#),
        ];
        for (arg, program, batch) in rows {
            assert_eq!(quote_argument(arg), program, "{arg:?}");
            assert_eq!(quote_batch_argument(arg), batch, "{arg:?}");
        }
    }

    #[test]
    fn no_argument_can_end_the_command() {
        // Outside quotes every meta character reaches cmd.exe escaped, and no `%` survives whole.
        for arg in ["\" & calc & \"", "x\" | whoami", "a^\"&b", "%COMSPEC%"] {
            // `%%cd:~,%` is read (and emptied) before any caret or meta character is.
            let raw = quote_argument(arg);
            assert_eq!(raw.matches("%%cd:~,%").count(), arg.matches('%').count(), "{raw}");
            let q = raw.replace("%cd:~,%", "");
            let mut chars = q.chars();
            while let Some(c) = chars.next() {
                if c == '^' {
                    chars.next();
                } else {
                    assert!(!is_meta(c), "{arg:?} -> {q:?}: {c:?} unescaped");
                }
            }
            // For a batch file, every quote inside is doubled: the quoting stays balanced.
            let b = quote_batch_argument(arg);
            assert_eq!(b.matches('"').count() % 2, 0, "{b}");
        }
        assert_eq!(launch("C:\\x.cmd", &["a\nb".into()], "cmd.exe"), Err(LINE_BREAK.to_string()));
        assert_eq!(launch("C:\\x\r.cmd", &[], "cmd.exe"), Err(LINE_BREAK.to_string()));
    }

    #[test]
    fn commands_are_found_with_pathext() {
        let files =
            ["C:\\node\\npx.cmd", "C:\\node\\node.exe", "C:\\work\\tool.bat", "C:\\bin\\x.js", "C:\\bin\\plain"];
        let exists = |p: &str| files.iter().any(|f| f.eq_ignore_ascii_case(p));
        let path = Some("C:\\bin;\"C:\\node\"");
        let r = |cmd: &str| resolve(cmd, "C:\\work", path, None, &exists);
        // The extension as PATHEXT spells it (Windows matches names without case).
        assert_eq!(r("npx").as_deref(), Some("C:\\node\\npx.CMD"));
        assert_eq!(r("NODE").as_deref(), Some("C:\\node\\NODE.EXE"));
        assert_eq!(r("tool").as_deref(), Some("C:\\work\\tool.BAT"));
        assert_eq!(r("node.exe").as_deref(), Some("C:\\node\\node.exe"));
        // Not a listed extension, or no such file.
        assert_eq!(r("x.js"), None);
        assert_eq!(r("plain"), None);
        assert_eq!(r("missing"), None);
        // With a separator: relative to the working directory only.
        assert_eq!(r(".\\tool").as_deref(), Some("C:\\work\\tool.BAT"));
        assert_eq!(r("C:\\node\\npx").as_deref(), Some("C:\\node\\npx.CMD"));
        // PATHEXT as the child's environment sets it.
        assert_eq!(resolve("x", "C:\\bin", None, Some(".JS"), &exists).as_deref(), Some("C:\\bin\\x.JS"));
    }

    #[test]
    fn batch_files_run_through_the_shell_and_programs_directly() {
        let args = vec!["-y".to_string(), "a b".to_string()];
        assert_eq!(
            launch("C:\\Program Files\\nodejs\\npx.cmd", &args, "C:\\Windows\\system32\\cmd.exe"),
            Ok(Launch::Shell {
                shell: "C:\\Windows\\system32\\cmd.exe".into(),
                line: r#"/d /e:on /v:off /s /c ""C:\Program Files\nodejs\npx.cmd" "-y" "a b"""#.into()
            })
        );
        assert_eq!(
            launch("C:\\p\\server.js", &["&".to_string()], "cmd.exe"),
            Ok(Launch::Shell {
                shell: "cmd.exe".into(),
                line: r#"/d /e:on /v:off /s /c ""C:\p\server.js" ^"^&^"""#.into()
            })
        );
        assert_eq!(
            launch("C:\\node\\node.exe", &args, "cmd.exe"),
            Ok(Launch::Direct { program: PathBuf::from("C:\\node\\node.exe"), args })
        );
    }
}
