//! Any string: `Reference::parse` must not panic, and whatever it accepts
//! must print to a form that parses back to the same value (the familiar form
//! too, except where Docker's familiar form is itself ambiguous).
#![no_main]

use berth_ref::Reference;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| {
    if let Ok(reference) = Reference::parse(input) {
        let printed = reference.to_string();
        assert_eq!(Reference::parse(&printed).as_ref(), Ok(&reference), "{input:?} -> {printed}");
        if reference.familiar_roundtrips() {
            assert_eq!(Reference::parse(&reference.familiar()).as_ref(), Ok(&reference));
        }
    }
});
