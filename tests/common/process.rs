//! A drainwatch run in the background, for the cluster tests that act mid-trial (Ctrl-C, a cut
//! API connection) once the trigger has been issued.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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
pub fn spawn_cmd_until_trigger(mut cmd: Command) -> (Child, Arc<AtomicBool>, Arc<Mutex<String>>) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let triggered = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take().unwrap();
    let (t, l) = (triggered.clone(), log.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.starts_with("trigger: ") {
                t.store(true, Ordering::SeqCst);
            }
            l.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    (child, triggered, log)
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
