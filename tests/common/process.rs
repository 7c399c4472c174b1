//! A drainwatch run in the background, for the cluster tests that act mid-trial (Ctrl-C, a cut
//! API connection) once the trigger has been issued.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Runs drainwatch with `args` in the background; returns the child, a flag raised when stderr
/// shows the trigger was issued, and stderr so far (for the failure message).
pub fn spawn_until_trigger<I, S>(args: I) -> (Child, Arc<AtomicBool>, Arc<Mutex<String>>)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(super::bin());
    cmd.args(args);
    spawn_cmd_until_trigger(cmd)
}

/// [`spawn_until_trigger`] of a command built by the caller (its environment, say).
pub fn spawn_cmd_until_trigger(cmd: Command) -> (Child, Arc<AtomicBool>, Arc<Mutex<String>>) {
    let (child, collected) = spawn_collected(cmd);
    (child, collected.triggered, collected.log)
}

/// What a reader thread collects from a child's stderr.
struct Collected {
    triggered: Arc<AtomicBool>,
    log: Arc<Mutex<String>>,
    eof: Arc<AtomicBool>,
}

/// Spawns `cmd` with stderr piped to a reader thread that collects it line by line.
fn spawn_collected(mut cmd: Command) -> (Child, Collected) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let c = Collected {
        triggered: Arc::new(AtomicBool::new(false)),
        log: Arc::new(Mutex::new(String::new())),
        eof: Arc::new(AtomicBool::new(false)),
    };
    let stderr = child.stderr.take().unwrap();
    let (t, l, e) = (c.triggered.clone(), c.log.clone(), c.eof.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.starts_with("trigger: ") {
                t.store(true, Ordering::SeqCst);
            }
            l.lock().unwrap().push_str(&(line + "\n"));
        }
        e.store(true, Ordering::SeqCst);
    });
    (child, c)
}

/// A drainwatch run in the background with its stderr collected line by line: whether it
/// issued the trigger, what it wrote so far, and whether its stderr reached its end. Killed
/// if the test fails.
pub struct Logged {
    pub child: Child,
    pub triggered: Arc<AtomicBool>,
    pub log: Arc<Mutex<String>>,
    pub eof: Arc<AtomicBool>,
}

impl Logged {
    pub fn spawn(cmd: Command) -> Self {
        let (child, c) = spawn_collected(cmd);
        Self {
            child,
            triggered: c.triggered,
            log: c.log,
            eof: c.eof,
        }
    }

    /// Its exit status and all it wrote to stderr, once it has exited and its stderr is read
    /// to the end (within `timeout`).
    pub fn exit(&mut self, timeout: Duration) -> (ExitStatus, String) {
        let status = super::wait::until(
            super::wait::with_output("the run exits", &self.log),
            timeout,
            || self.child.try_wait().unwrap(),
        );
        super::wait::until("its stderr read to the end", timeout, || {
            self.eof.load(Ordering::SeqCst).then_some(())
        });
        (status, self.log.lock().unwrap().clone())
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until a run spawned by [`spawn_until_trigger`] has issued its trigger (within
/// `timeout`), failing at once if it exits first; the failure shows its output so far.
#[track_caller]
pub fn wait_for_trigger(
    child: &mut Child,
    triggered: &AtomicBool,
    log: &Mutex<String>,
    timeout: Duration,
) {
    super::wait::until_every(
        super::wait::with_output("the run issues its trigger", log),
        timeout,
        Duration::from_millis(100),
        || {
            let exited = child.try_wait().unwrap();
            assert!(
                exited.is_none(),
                "the run exited ({exited:?}) before its trigger:\n{}",
                log.lock().unwrap()
            );
            triggered.load(Ordering::SeqCst).then_some(())
        },
    );
}

/// Kills the spawned run if the test fails, so it cannot disturb the next test's trials.
pub struct Reaper(pub Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
