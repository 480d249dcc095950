//! The NAND channels: each carries the data of its dies' programs and reads, one transfer
//! at a time, in the earliest idle stretch it fits in (`Gaps`).

use super::link::Gaps;
use super::Device;
use crate::time::Ns;

/// The channels, by index (die `d` is on channel `d % channels`).
pub(super) struct Channels {
    /// Per channel, end of its last booking [ns].
    pub(super) free_ns: Vec<Ns>,
    /// Per channel, idle stretches before transfers booked ahead (programs waiting for their
    /// die, reads for their sense), for programs and reads.
    pub(super) gaps: Vec<Gaps>,
    /// Time one 4 KiB unit takes to cross a channel [ns].
    pub(super) unit_ns: Ns,
    /// Time a full multi-plane program's data takes to cross a channel [ns].
    pub(super) program_ns: Ns,
    /// Channel of each die [channel index].
    pub(super) of_die: Vec<usize>,
}

impl Device {
    /// The channel die `die` is on.
    #[inline]
    pub(super) fn channel_of_die(&self, die: usize) -> usize {
        self.chan.of_die[die]
    }

    /// Books channel `ch` for a program's transfer, its die free and its data buffered at
    /// `ready`: in the earliest idle stretch from then that it fits in (left by any transfer
    /// booked ahead), else after the channel's last booking, leaving the channel idle before
    /// it if the die is free only later. Returns when the transfer starts.
    #[inline(always)]
    pub(super) fn program_channel(&mut self, ch: usize, ready: Ns) -> Ns {
        // Stretches over before the command now accepted are of no more use; those after it
        // stay, for reads too (a phase of writes may book a die's work far ahead, and a read
        // that comes next crosses the channel between).
        let end = self.chan.gaps[ch].book(&mut self.chan.free_ns[ch], self.ctrl.free_ns, ready, self.chan.program_ns, [true, true], false);
        end - self.chan.program_ns
    }

    /// When a read's unit, sensed at `sensed` for a command accepted at `t`, has crossed
    /// channel `ch`: in an idle stretch before program transfers booked ahead if one has
    /// room (see [`Gaps`]), else after the channel's last booking, leaving the channel idle
    /// before it, for programs, if the unit is sensed only later.
    pub(super) fn read_channel(&mut self, ch: usize, t: Ns, sensed: Ns) -> Ns {
        self.chan.gaps[ch].book(&mut self.chan.free_ns[ch], t, sensed, self.chan.unit_ns, [true, false], true)
    }
}
