//! Warm shells while watching: one per rule and container instance, each a
//! [`session_script`](crate::protocol::session_script) kept open by the target
//! (a `podman exec -i`, or one exec stream per container on Kubernetes), so an
//! update is one frame on it instead of a new exec.
//!
//! A shell that breaks (the stream was cut, the container stopped, the image has
//! no `sh`) is dropped; that update and those after it go through one exec each,
//! which re-sends the whole update, until the shell is opened again: after
//! [`FIRST_RETRY`], doubling with each break up to [`LAST_RETRY`], so a container
//! that cannot keep one costs an exec per update, not an exec and a failed open.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::SyncError;
use crate::protocol::ExecOutput;
use crate::target::{Container, Input, Shell, Target};

/// The wait before a broken shell is opened again the first time.
pub const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest wait before a broken shell is opened again.
pub const LAST_RETRY: Duration = Duration::from_secs(60);

/// A shell that could not take an update: it broke, or could not be opened.
/// The update went over an exec instead; this says so, once per break.
#[derive(Debug)]
pub struct Broken {
    /// What the shell or its opening said.
    pub reason: SyncError,
    /// When one is opened again.
    pub retry_in: Duration,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "its warm shell broke ({}): this update went over an exec, and the shell is opened again in {} s",
            self.reason,
            self.retry_in.as_secs()
        )
    }
}

/// The shells of a session, by rule, container ID and instance.
#[derive(Default)]
pub struct Shells {
    open: Mutex<HashMap<String, Box<dyn Shell>>>,
    /// Keys whose shell broke: when to open one again, and the wait after the next break.
    broken: Mutex<HashMap<String, (Instant, Duration)>>,
}

/// The key of `rule`'s shell in `container`'s current instance.
pub fn key(rule: &str, container: &Container) -> String {
    format!("{rule}\0{}\0{}", container.id, container.instance)
}

impl Shells {
    /// Forgets the shells of `rule` whose keys are not in `current` (containers
    /// gone, instances ended): dropping one closes its exec.
    pub fn retain(&self, rule: &str, current: &BTreeSet<String>) {
        let prefix = format!("{rule}\0");
        let keep = |key: &String| !key.starts_with(&prefix) || current.contains(key);
        berth_io::locked(&self.open).retain(|key, _| keep(key));
        berth_io::locked(&self.broken).retain(|key, _| keep(key));
    }

    /// Sends one frame over the shell at `key`, opening one with `argv` when there
    /// is none and the last break's wait is over. `Ok(None)` when there is no shell
    /// to use (the target has none, or it is waiting), `Err` when it broke now: the
    /// caller sends the update through an exec either way.
    pub fn send(
        &self,
        target: &dyn Target,
        container: &Container,
        key: &str,
        argv: impl FnOnce() -> Vec<String>,
        frame: Input<'_>,
    ) -> Result<Option<ExecOutput>, Broken> {
        let taken = berth_io::locked(&self.open).remove(key);
        let mut shell = match taken {
            Some(shell) => shell,
            None => {
                let waiting = berth_io::locked(&self.broken)
                    .get(key)
                    .is_some_and(|(at, _)| Instant::now() < *at);
                if waiting {
                    return Ok(None);
                }
                match target.open_shell(container, &argv()) {
                    None => return Ok(None),
                    Some(Ok(shell)) => shell,
                    Some(Err(reason)) => return Err(self.broke(key, reason)),
                }
            }
        };
        match shell.update(frame) {
            Ok(output) => {
                berth_io::locked(&self.broken).remove(key);
                berth_io::locked(&self.open).insert(key.to_string(), shell);
                Ok(Some(output))
            }
            // Dropped here, which closes it.
            Err(reason) => Err(self.broke(key, reason)),
        }
    }

    /// Records a break at `key`: the next open waits, longer each time.
    fn broke(&self, key: &str, reason: SyncError) -> Broken {
        let mut broken = berth_io::locked(&self.broken);
        let wait = broken
            .get(key)
            .map_or(FIRST_RETRY, |(_, last)| (*last * 2).min(LAST_RETRY));
        broken.insert(key.to_string(), (Instant::now() + wait, wait));
        Broken {
            reason,
            retry_in: wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SyncError;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Opens shells that work `works` times each, counting opens.
    struct Flaky {
        opens: AtomicUsize,
        works: usize,
    }

    struct Counted(usize);

    impl Shell for Counted {
        fn update(&mut self, input: Input<'_>) -> Result<ExecOutput, SyncError> {
            input(&mut std::io::sink()).map_err(SyncError::io("<test>"))?;
            if self.0 == 0 {
                return Err(SyncError::io("<test>")(
                    std::io::ErrorKind::BrokenPipe.into(),
                ));
            }
            self.0 -= 1;
            Ok(ExecOutput::default())
        }
    }

    impl Target for Flaky {
        fn describe(&self) -> String {
            "flaky".into()
        }
        fn list(&self) -> Result<Vec<Container>, SyncError> {
            Ok(Vec::new())
        }
        fn exec(&self, _: &Container, _: &[String], _: Input<'_>) -> Result<ExecOutput, SyncError> {
            Ok(ExecOutput::default())
        }
        fn fallback_hint(&self) -> String {
            String::new()
        }
        fn open_shell(
            &self,
            _: &Container,
            _: &[String],
        ) -> Option<Result<Box<dyn Shell>, SyncError>> {
            self.opens.fetch_add(1, Ordering::SeqCst);
            Some(Ok(Box::new(Counted(self.works))))
        }
    }

    fn container(instance: &str) -> Container {
        Container {
            id: "ns/pod/app".into(),
            name: "app".into(),
            image: "x".into(),
            instance: instance.into(),
            label: "pod/pod/app".into(),
        }
    }

    #[test]
    fn a_shell_is_reused_dropped_when_it_breaks_and_reopened_only_after_a_wait() {
        let target = Arc::new(Flaky {
            opens: AtomicUsize::new(0),
            works: 2,
        });
        let shells = Shells::default();
        let c = container("1");
        let k = key("app", &c);
        let send = || shells.send(&*target, &c, &k, Vec::new, &mut |_| Ok(()));
        assert!(matches!(send(), Ok(Some(_))));
        assert!(matches!(send(), Ok(Some(_))));
        assert_eq!(target.opens.load(Ordering::SeqCst), 1, "one shell for both");
        let broken = send().expect_err("the third frame breaks it: an exec sends it");
        assert_eq!(
            broken.to_string(),
            "its warm shell broke (<test>: broken pipe): this update went over an exec, and the shell is opened again in 1 s"
        );
        assert!(matches!(send(), Ok(None)), "waiting: no open, an exec");
        assert_eq!(target.opens.load(Ordering::SeqCst), 1);
        // The wait over, it opens again (and the next break waits twice as long).
        berth_io::locked(&shells.broken).insert(k.clone(), (Instant::now(), FIRST_RETRY));
        assert!(matches!(send(), Ok(Some(_))));
        assert_eq!(target.opens.load(Ordering::SeqCst), 2);
        assert!(
            berth_io::locked(&shells.broken).is_empty(),
            "a frame that worked forgets the break"
        );
    }

    #[test]
    fn waits_double_up_to_the_last_and_ended_instances_are_forgotten() {
        let target = Flaky {
            opens: AtomicUsize::new(0),
            works: 0,
        };
        let shells = Shells::default();
        let c = container("1");
        let k = key("app", &c);
        let mut waits = Vec::new();
        for _ in 0..9 {
            berth_io::locked(&shells.broken)
                .entry(k.clone())
                .and_modify(|(at, _)| *at = Instant::now());
            let broken = shells
                .send(&target, &c, &k, Vec::new, &mut |_| Ok(()))
                .expect_err("every shell breaks");
            waits.push(broken.retry_in.as_secs());
            assert_eq!(broken.retry_in, berth_io::locked(&shells.broken)[&k].1);
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        let restarted = key("app", &container("2"));
        shells.retain("app", &BTreeSet::from([restarted]));
        assert!(berth_io::locked(&shells.broken).is_empty());
    }
}
