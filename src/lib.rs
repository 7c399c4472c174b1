//! drainwatch
