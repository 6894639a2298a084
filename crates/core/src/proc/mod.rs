//! Starting a program the way Node users expect on every platform, and ending all of it.
//!
//! - [`command`]: which file a command names and how it is started. On Windows a bare name is
//!   looked up on `PATH` with the extensions `PATHEXT` lists, and a batch file (`npx.cmd`, a
//!   package's `node_modules\.bin` shim) runs through `cmd.exe` with every argument quoted and its
//!   meta characters escaped, so an argument cannot become a command (what the MCP SDK's
//!   cross-spawn does for the reference).
//! - [`tree`]: a process and everything it starts, ended together. On Windows that is a Job
//!   Object (the process is started suspended, put in the job, then let run, so nothing it starts
//!   escapes); on Unix the callers use a process group.

pub mod command;
#[cfg(windows)]
pub mod tree;
