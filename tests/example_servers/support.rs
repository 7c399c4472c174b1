//! The example servers as child processes: started with their environment, their stdout's
//! `listening` lines read for the ports, signalled and waited for.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common::*;

/// A running example server.
pub struct Server {
    child: Reaped,
    /// The ports it announced, by the word before them (`listening`, `listening-tls`).
    pub ports: BTreeMap<String, u16>,
}

impl Server {
    /// Starts example `name` as pod `pod` with `env` on top of `PORT=0` and no TLS files, and
    /// reads `lines` announcement lines from its stdout.
    pub fn start(name: &str, pod: &str, env: &[(&str, &str)], lines: usize) -> Self {
        let no_tls = temp_dir("no-tls");
        let mut cmd = Command::new(example_bin(name));
        cmd.env("PORT", "0")
            .env("TLS_PORT", "0")
            .env("TLS_DIR", &no_tls)
            .env("POD_NAME", pod)
            .env("DRAIN_DELAY", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut ports = BTreeMap::new();
        for _ in 0..lines {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            let (word, port) = line
                .trim()
                .split_once(' ')
                .unwrap_or_else(|| panic!("unexpected line {line:?}"));
            ports.insert(word.to_string(), port.parse().unwrap());
        }
        Self {
            child: Reaped(child),
            ports,
        }
    }

    /// The plaintext port.
    pub fn port(&self) -> u16 {
        self.ports["listening"]
    }

    pub fn sigterm(&self) {
        kill(Pid::from_raw(self.child.0.id() as i32), Signal::SIGTERM).unwrap();
    }

    /// Waits for the exit; its code. Blocking: call it off the async runtime's workers or
    /// once nothing async is left to drive.
    pub fn wait(&mut self, within: Duration) -> Option<i32> {
        let child = &mut self.child.0;
        wait::until_every(
            "the server exits",
            within,
            Duration::from_millis(20),
            || child.try_wait().unwrap(),
        )
        .code()
    }
}
