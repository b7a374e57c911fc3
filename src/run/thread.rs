//! Starting a helper thread (design §3.15, sixth round): on Linux by
//! `pthread_create` itself rather than through `std::thread`, which gives
//! every thread it starts a signal stack of its own for reporting a stack
//! overflow: an `mmap`, an `mprotect` for its guard page, two `sigaltstack`
//! and the stack's bounds asked of glibc (`sched_getaffinity`) as the thread
//! starts, and `sigaltstack` and `munmap` as it ends. The two that change
//! the address space take the process's memory-map lock, which a 256-way
//! fan-out's threads, faulting in their stacks, contend for.
//!
//! What a helper gives up: a stack overflow in a call (a bug; the deepest
//! call measured goes 48 KiB into its 2 MiB) kills the process by SIGSEGV
//! instead of std's message and abort, and its stack is 2 MiB whatever
//! `RUST_MIN_STACK` says. Its name, std's thread handle (made on first use)
//! and thread-locals (destroyed as it ends) are as before.

/// A helper's stack: std's default for the threads it starts.
#[cfg(target_os = "linux")]
const STACK: usize = 2 * 1024 * 1024;

/// What a started thread runs.
pub(super) type Main = Box<dyn FnOnce() + Send + 'static>;

/// Starts a thread named `axe-call` running `main`; false when the system
/// would start no thread (`main` is then dropped unrun).
#[cfg(target_os = "linux")]
pub(super) fn spawn(main: Main) -> bool {
    // Boxed again: a thin pointer is what pthread_create passes on.
    let arg = Box::into_raw(Box::new(main));
    // SAFETY: `attr` and `thread` are written by pthread before they are
    // read (all-zero is a valid value of either type); `arg`
    // goes to exactly one owner: the thread (`start` takes it back once),
    // or, when no thread started, this function, which drops it.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_attr_init(&mut attr) != 0 {
            drop(Box::from_raw(arg));
            return false;
        }
        // An integer on glibc, a pointer on musl: zeroed is either's none.
        let mut thread: libc::pthread_t = std::mem::zeroed();
        let started = libc::pthread_attr_setstacksize(&mut attr, STACK) == 0
            && libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED) == 0
            && libc::pthread_create(&mut thread, &attr, start, arg.cast()) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if !started {
            drop(Box::from_raw(arg));
        }
        started
    }
}

/// The thread's first function: names it, runs its main, and never lets
/// a panic unwind into glibc (the helper catches its calls' own; one here
/// is a bug in the helper's loop, and aborts the process: std would end
/// only this thread, and the fan-out waiting on its call would never hear
/// of it).
#[cfg(target_os = "linux")]
extern "C" fn start(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the box `spawn` leaked for this thread alone.
    let main = unsafe { Box::from_raw(arg.cast::<Main>()) };
    // SAFETY: the name is a NUL-terminated string under 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"axe-call".as_ptr());
    }
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(main)).is_err() {
        std::process::abort();
    }
    std::ptr::null_mut()
}

/// Elsewhere, std's thread.
#[cfg(not(target_os = "linux"))]
pub(super) fn spawn(main: Main) -> bool {
    std::thread::Builder::new()
        .name("axe-call".into())
        .spawn(main)
        .is_ok()
}
