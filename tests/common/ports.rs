//! Ports for a probe that a child process binds, so the test cannot bind port 0 and keep the
//! socket. They come from 12000–29999: below the kernel's ephemeral range (checked, not
//! assumed), which every outgoing connection on the machine draws its source port from, and
//! clear of the ports the local cluster listens on (10000–10999 for its components,
//! 30000–32767 for NodePorts). Each test process owns a block of that range under an
//! exclusive lock that every drainwatch test process on the machine takes (all worktrees share
//! the lock directory), and hands the block's ports out in order, never twice: tests running in
//! parallel, in one process or several, never get the same port. The bind check that remains
//! only steps over a port some unrelated program already holds.

use std::fs::{File, OpenOptions};
use std::net::{TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU16, Ordering};

use nix::fcntl::{Flock, FlockArg};

const FIRST: u16 = 12000;
const END: u16 = 30000;
const BLOCK: u16 = 200;
const BLOCKS: u16 = (END - FIRST) / BLOCK;

/// This process's block: its first port, and the lock file that keeps it ours until we exit.
struct Block {
    base: u16,
    _lock: Flock<File>,
}

fn lock_dir() -> PathBuf {
    std::env::temp_dir().join("drainwatch-test-ports")
}

/// The kernel's ephemeral range, from `net.ipv4.ip_local_port_range`.
fn ephemeral_range() -> (u16, u16) {
    let path = "/proc/sys/net/ipv4/ip_local_port_range";
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut it = text.split_whitespace().map(|w| w.parse::<u16>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

fn claim_block() -> Block {
    let (lo, hi) = ephemeral_range();
    assert!(
        hi < FIRST || lo >= END,
        "the test port range {FIRST}-{} overlaps the ephemeral range {lo}-{hi} \
         (net.ipv4.ip_local_port_range): ports handed to tests could be taken by any \
         outgoing connection",
        END - 1
    );
    let dir = lock_dir();
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let start = (std::process::id() % u32::from(BLOCKS)) as u16;
    for i in 0..BLOCKS {
        let b = (start + i) % BLOCKS;
        let path = dir.join(format!("block-{b}.lock"));
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Ok(lock) = Flock::lock(f, FlockArg::LockExclusiveNonblock) {
            return Block {
                base: FIRST + b * BLOCK,
                _lock: lock,
            };
        }
    }
    panic!(
        "all {BLOCKS} test port blocks are locked by other test processes ({})",
        dir.display()
    );
}

fn free(port: u16) -> bool {
    TcpListener::bind(("0.0.0.0", port)).is_ok() && UdpSocket::bind(("0.0.0.0", port)).is_ok()
}

/// Three consecutive ports, free for TCP and UDP on all addresses, that no other test of any
/// drainwatch test process is given.
pub fn free_ports() -> (u16, u16, u16) {
    static BLOCK_OF_THIS_PROCESS: OnceLock<Block> = OnceLock::new();
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = BLOCK_OF_THIS_PROCESS.get_or_init(claim_block).base;
    loop {
        let off = NEXT.fetch_add(3, Ordering::SeqCst);
        assert!(
            off + 3 <= BLOCK,
            "this test process used up its {BLOCK} ports ({base}-{})",
            base + BLOCK - 1
        );
        let p = base + off;
        if (p..p + 3).all(free) {
            return (p, p + 1, p + 2);
        }
    }
}
