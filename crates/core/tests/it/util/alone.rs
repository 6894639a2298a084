//! Tests that need something a process has only one of run in a process of their own.
//!
//! Every test of this binary shares one process: its environment, its working directory, and
//! what the core reads from them once per process (the TLS trust of `NODE_EXTRA_CA_CERTS` is
//! fixed by the first client any test builds). A test that needs those set its own way does
//! not change them here: [`alone!`](crate::alone) starts this binary again with only that
//! test selected, set up as the test asks (environment, working directory), and the test
//! passes when that run passes. Nothing of the process running the other tests changes.

use std::process::{Command, Stdio};

/// Set in the process started for one test: the test's name.
const MARK: &str = "TOOLNEXUS_IT_ALONE";

/// The name libtest gives a test: its module path without the crate, then its name.
pub fn test_name(module_path: &str, test: &str) -> String {
    match module_path.split_once("::") {
        Some((_crate, rest)) => format!("{rest}::{test}"),
        None => test.to_string(),
    }
}

/// Whether this process was started to run `test` on its own.
pub fn is_alone(test: &str) -> bool {
    std::env::var(MARK).is_ok_and(|name| name == test)
}

/// Run `test`, alone, in a new process of this binary set up by `setup` (what `setup` returns,
/// say a directory the process uses, is kept until the process has ended); panic with what it
/// printed unless exactly that test ran and passed.
pub fn run_alone<Keep>(test: &str, setup: impl FnOnce(&mut Command) -> Keep) {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([test, "--exact", "--test-threads", "1", "--nocapture"])
        .env(MARK, test)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let _keep = setup(&mut cmd);
    let out = cmd.output().expect("the test binary starts");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed;"),
        "{test}, run in a process of its own, failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

/// At the top of a test: `alone!(test_fn)` or `alone!(test_fn, setup)`. In the shared process,
/// run the test in a process of its own (set up by `setup`, see [`run_alone`]) and return; in
/// that process, go on with the test.
#[macro_export]
macro_rules! alone {
    ($test:ident) => {
        $crate::alone!($test, |_| {})
    };
    ($test:ident, $setup:expr) => {
        let name = $crate::util::alone::test_name(module_path!(), stringify!($test));
        if !$crate::util::alone::is_alone(&name) {
            return $crate::util::alone::run_alone(&name, $setup);
        }
    };
}
