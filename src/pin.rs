//! Keep the addon's image mapped for the life of the process.
//!
//! Node unloads an addon when the last environment that loaded it goes away, which happens
//! when a worker thread that was the only user ends. The addon's own threads (the runtime,
//! its blocking pool) and the thread-local destructors Rust registered for exiting threads
//! still point into its code then, and the next instruction they run is in unmapped memory:
//! the whole process dies with SIGSEGV (rust-lang/rust#91979). Marking the image
//! "never unload" when it is loaded closes that door; loading it again later (another
//! worker, the main thread) finds the same image, with its runtime still running.

/// Pin the image that holds this function. Runs as a library constructor, before Node
/// registers the module in any environment.
#[cfg(unix)]
#[napi_derive::module_init]
fn pin_image() {
    // SAFETY: `Dl_info` is a plain C struct of pointers and integers, for which all zeroes
    // is a valid value. `dladdr` only reads the loader's tables for an address inside this
    // image, and `dli_fname` is a C string owned by the loader that stays valid while the
    // image is loaded (which is all of the call below). `dlopen` with RTLD_NOLOAD never loads
    // anything: it only takes a new reference to the image that is already mapped, and
    // RTLD_NODELETE makes every later `dlclose` of it a no-op. The handle it returns is
    // deliberately never closed.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let here = pin_image as *const ();
        if libc::dladdr(here.cast(), &mut info) == 0 || info.dli_fname.is_null() {
            return;
        }
        let _ = libc::dlopen(info.dli_fname, libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
    }
}

/// The same on Windows: a module handle taken with the PIN flag keeps the DLL loaded until
/// the process ends, whatever `FreeLibrary` calls follow.
#[cfg(windows)]
#[napi_derive::module_init]
fn pin_image() {
    const FROM_ADDRESS: u32 = 0x4;
    const PIN: u32 = 0x1;
    #[link(name = "kernel32")]
    extern "system" {
        fn GetModuleHandleExW(flags: u32, name: *const u16, module: *mut *mut std::ffi::c_void) -> i32;
    }
    let mut module = std::ptr::null_mut();
    // SAFETY: with FROM_ADDRESS the name argument is an address inside this image; the
    // out-pointer is valid; the pinned handle is deliberately never released.
    unsafe {
        let here = pin_image as *const u16;
        let _ = GetModuleHandleExW(FROM_ADDRESS | PIN, here, &mut module);
    }
}
