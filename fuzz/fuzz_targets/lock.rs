//! Any text as berth.lock: parsed or refused, never a panic; what parses writes
//! back (`to_yaml`) to text that parses to the same lock.
#![no_main]

use berth_core::lock::Lock;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(lock) = Lock::parse("berth.lock", text) {
        let written = lock.to_yaml();
        let again = Lock::parse("berth.lock", &written)
            .unwrap_or_else(|e| panic!("to_yaml wrote a lock it cannot read: {e}\n{written}"));
        let mut a = lock.entries.clone();
        let mut b = again.entries;
        a.sort_by(|x, y| x.component.cmp(&y.component));
        b.sort_by(|x, y| x.component.cmp(&y.component));
        assert_eq!(a, b, "{written}");
    }
});
