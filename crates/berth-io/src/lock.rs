//! One rule for a poisoned lock.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// The guard of `mutex`, poisoned or not. berth's locks guard caches, counters
/// and indexes that every section leaves whole (a few map operations), and a
/// thread that panicked is reported by whatever supervises it (a JoinSet, the
/// dev loop, the controller's runtime): its panic must not turn into an empty
/// cache or a lost count — a miss that would hide the bug behind extra work.
pub fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_still_gives_its_value() {
        let mutex = std::sync::Arc::new(Mutex::new(vec![1]));
        let held = std::sync::Arc::clone(&mutex);
        let _ = std::thread::spawn(move || {
            let _guard = held.lock().unwrap();
            panic!("poisons the lock");
        })
        .join(); // the panic is this test's doing
        assert!(mutex.is_poisoned());
        assert_eq!(*locked(&mutex), vec![1]);
    }
}
