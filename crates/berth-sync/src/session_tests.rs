use super::*;
use crate::protocol::ExecOutput;
use crate::target::Input;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn a_panicked_container_thread_is_a_failed_outcome_not_a_missing_one() {
    let container = Container {
        id: "c1".into(),
        name: "web".into(),
        image: "x".into(),
        instance: "c1/1".into(),
        label: "fake:web".into(),
    };
    let outcome = std::thread::scope(|scope| {
        let handle = scope.spawn(|| -> Outcome { panic!("boom") });
        joined(&container, handle.join())
    });
    let err = outcome.result.unwrap_err().to_string();
    assert_eq!(
        err,
        "the sync into fake:web stopped unexpectedly (boom); this is a bug in berth, please report it"
    );
}

/// One container whose every exec fails, counting execs.
struct Failing(Arc<AtomicUsize>);

impl Target for Failing {
    fn describe(&self) -> String {
        "fake".into()
    }
    fn list(&self) -> Result<Vec<Container>, SyncError> {
        Ok(vec![Container {
            id: "c1".into(),
            name: "web".into(),
            image: "x".into(),
            instance: "c1/1".into(),
            label: "fake:web".into(),
        }])
    }
    fn exec(&self, _: &Container, _: &[String], _: Input<'_>) -> Result<ExecOutput, SyncError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ExecOutput {
            status: 1,
            stdout: Vec::new(),
            stderr: b"boom".to_vec(),
        })
    }
    fn fallback_hint(&self) -> String {
        String::new()
    }
}

#[test]
fn a_failed_catch_up_is_retried_after_a_pause_not_every_poll() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let project = berth_core::project::parse(
        "berth.yaml",
        dir.path().to_path_buf(),
        "name: x\nsync:\n  - target: {container: web}\n    paths: [{from: src/, to: /app/}]\n",
    )
    .unwrap();
    let execs = Arc::new(AtomicUsize::new(0));
    let mut session =
        Session::new(&project, &[], &[], Arc::new(Failing(execs.clone())), false).unwrap();
    session.scan().unwrap();
    let containers = session.containers(true).unwrap();
    let first = session.sync_containers(&containers, false, "initial");
    assert!(first[0].outcomes[0].result.is_err());
    assert_eq!(execs.load(Ordering::SeqCst), 1);
    let second = session.sync_containers(&containers, false, "restart");
    assert!(second.is_empty(), "left alone until the pause is over");
    assert_eq!(execs.load(Ordering::SeqCst), 1);
    // --once (force) always tries.
    session.sync_containers(&containers, true, "once");
    assert_eq!(execs.load(Ordering::SeqCst), 2);
}

/// One container whose execs fail while `down` is set (an API server away).
struct Flaky {
    down: std::sync::atomic::AtomicBool,
    execs: AtomicUsize,
}

impl Target for Flaky {
    fn describe(&self) -> String {
        "fake".into()
    }
    fn list(&self) -> Result<Vec<Container>, SyncError> {
        Failing(Arc::default()).list()
    }
    fn exec(&self, _: &Container, _: &[String], input: Input<'_>) -> Result<ExecOutput, SyncError> {
        self.execs.fetch_add(1, Ordering::SeqCst);
        input(&mut std::io::sink()).map_err(SyncError::io("<update>"))?;
        let down = self.down.load(Ordering::SeqCst);
        Ok(ExecOutput {
            status: i32::from(down),
            stdout: Vec::new(),
            stderr: if down { b"away".to_vec() } else { Vec::new() },
        })
    }
    fn fallback_hint(&self) -> String {
        String::new()
    }
}

/// #33 item 11: an update that failed to reach a container is not forgotten
/// once the snapshot moved on: the container is behind until a catch-up
/// against its own files lands, on the next rescan or look at the pods.
#[test]
fn an_update_that_failed_is_caught_up_later_not_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/a.txt"), "one").unwrap();
    let project = berth_core::project::parse(
        "berth.yaml",
        dir.path().to_path_buf(),
        "name: x\nsync:\n  - target: {container: web}\n    paths: [{from: src/, to: /app/}]\n",
    )
    .unwrap();
    let target = Arc::new(Flaky {
        down: false.into(),
        execs: AtomicUsize::new(0),
    });
    let mut session = Session::new(&project, &[], &[], target.clone(), false).unwrap();
    session.scan().unwrap();
    let containers = session.containers(true).unwrap();
    session.sync_containers(&containers, false, "initial");
    assert!(!session.behind());

    target.down.store(true, Ordering::SeqCst);
    std::fs::write(dir.path().join("src/a.txt"), "two").unwrap();
    let changed = BTreeSet::from([dir.path().join("src/a.txt")]);
    let reports = session.on_changes(&changed, &containers).unwrap();
    assert!(reports[0].outcomes[0].result.is_err());
    assert!(session.behind(), "the failed update is pending");

    // Nothing changed since, yet the rescan catches the container up.
    target.down.store(false, Ordering::SeqCst);
    let before = target.execs.load(Ordering::SeqCst);
    let reports = session.on_changes(&BTreeSet::new(), &containers).unwrap();
    assert_eq!(reports[0].reason, "retry");
    assert!(reports[0].outcomes[0].result.is_ok());
    assert!(target.execs.load(Ordering::SeqCst) > before);
    assert!(!session.behind());
    // Caught up: the next empty rescan sends nothing.
    assert!(session
        .on_changes(&BTreeSet::new(), &containers)
        .unwrap()
        .is_empty());
}

#[test]
fn a_bad_trigger_is_called_a_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let project = berth_core::project::parse(
        "berth.yaml",
        dir.path().to_path_buf(),
        "name: x\nsync:\n  - target: {container: web}\n    run: [{cmd: [x], trigger: ['[bad']}]\n",
    )
    .unwrap();
    let err = Session::new(&project, &[], &[], Arc::new(Failing(Arc::default())), false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with("berth.yaml:4:32: invalid trigger pattern `[bad`"),
        "{err}"
    );
}
