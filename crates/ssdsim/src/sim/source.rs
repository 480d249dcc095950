//! Where the host loop takes its commands from ([`Source`]): a workload's generator
//! ([`GenSource`], or [`UniformSource`] for fio's plain random pattern), or the current
//! chunk of a trace replay ([`ChunkSource`]); commands are generated ahead so that their
//! mapping entries can be prefetched.

use crate::command::{CmdKind, Command};
use crate::ftl::Ftl;
use crate::rng::Rng;
use crate::workload::SECTORS_PER_UNIT;

/// Where the host loop takes its commands from: a workload's generator, or the current
/// chunk of a trace replay.
pub(crate) trait Source {
    /// The next command, not yet consumed; None when the source has nothing more now (the
    /// end of a replay chunk, or a command it refuses).
    fn peek(&mut self) -> Option<Command>;
    /// Consumes the command `peek` gave. May prefetch mapping entries of later commands.
    fn advance(&mut self, rng: &mut Rng, ftl: &Ftl);
}

/// Commands generated ahead: how far, so their mapping entries can be prefetched.
pub(crate) const LOOKAHEAD: usize = 16;

/// A workload's commands, generated [`LOOKAHEAD`] ahead of submission: the L2P entry of a
/// command is prefetched when it is generated; half way, the valid-bit word and block
/// record of the copy a write or TRIM will invalidate; three quarters of the way, the
/// greedy bucket links that invalidation will touch ([`Ftl::prefetch_old_links`]).
pub(crate) struct GenSource {
    pub(crate) gen: crate::workload::Generator,
    pub(crate) ring: [Command; LOOKAHEAD],
    pub(crate) pos: usize,
    /// log2 of the generator's addresses per 4 KiB unit (0: units; 3: sectors).
    pub(crate) shift: u32,
}

impl GenSource {
    pub(crate) fn new(mut gen: crate::workload::Generator, rng: &mut Rng) -> Self {
        let ring = std::array::from_fn(|_| gen.next(rng));
        let shift = gen.unit_shift();
        GenSource { gen, ring, pos: 0, shift }
    }
}

impl GenSource {
    /// The first unit and the number of units (at most 64) whose old copies the command
    /// `ahead` commands on will invalidate; None for a read.
    #[inline(always)]
    fn old_copies(&self, ahead: usize) -> Option<(u64, u64)> {
        let c = self.ring[(self.pos + ahead) % LOOKAHEAD];
        if c.kind == CmdKind::Read {
            return None;
        }
        let units = if self.shift == 0 { c.units } else { (c.unit + c.units).div_ceil(SECTORS_PER_UNIT) - (c.unit >> self.shift) };
        Some((c.unit >> self.shift, units.min(64)))
    }
}

impl Source for GenSource {
    #[inline(always)]
    fn peek(&mut self) -> Option<Command> {
        Some(self.ring[self.pos % LOOKAHEAD])
    }

    #[inline(always)]
    fn advance(&mut self, rng: &mut Rng, ftl: &Ftl) {
        let next = self.gen.next(rng);
        ftl.prefetch(next.unit >> self.shift);
        if let Some((unit, units)) = self.old_copies(LOOKAHEAD / 2) {
            ftl.prefetch_old_range(unit, units);
        }
        if let Some((unit, _)) = self.old_copies(LOOKAHEAD / 4) {
            ftl.prefetch_old_links(unit);
        }
        self.ring[self.pos % LOOKAHEAD] = next;
        self.pos = (self.pos + 1) % LOOKAHEAD;
    }
}

/// fio's plain random pattern (`rw=randwrite`, `randread`, `randtrim`: one direction, one
/// block size, uniform offsets): only the addresses are generated ahead, as before
/// workloads existed, so the commonest phase keeps its lean loop.
#[derive(Clone, Copy)]
pub(crate) struct UniformSource {
    pub(crate) kind: CmdKind,
    pub(crate) start_unit: u64,
    pub(crate) blocks: u64,
    pub(crate) bs_units: u64,
    pub(crate) ring: [u64; LOOKAHEAD],
    pub(crate) pos: usize,
}

impl UniformSource {
    pub(crate) fn new(kind: CmdKind, start_unit: u64, blocks: u64, bs_units: u64, rng: &mut Rng) -> Self {
        let mut s = UniformSource { kind, start_unit, blocks, bs_units, ring: [0; LOOKAHEAD], pos: 0 };
        for i in 0..LOOKAHEAD {
            s.ring[i] = s.draw(rng);
        }
        s
    }

    #[inline(always)]
    pub(crate) fn draw(&self, rng: &mut Rng) -> u64 {
        self.start_unit + rng.below(self.blocks) * self.bs_units
    }
}

impl Source for UniformSource {
    #[inline(always)]
    fn peek(&mut self) -> Option<Command> {
        Some(Command { kind: self.kind, unit: self.ring[self.pos % LOOKAHEAD], units: self.bs_units })
    }

    #[inline(always)]
    fn advance(&mut self, rng: &mut Rng, ftl: &Ftl) {
        let next = self.draw(rng);
        ftl.prefetch(next);
        if self.kind != CmdKind::Read {
            let half = self.ring[(self.pos + LOOKAHEAD / 2) % LOOKAHEAD];
            if self.bs_units == 1 {
                ftl.prefetch_old(half);
            } else {
                ftl.prefetch_old_range(half, self.bs_units.min(64));
            }
            ftl.prefetch_old_links(self.ring[(self.pos + LOOKAHEAD / 4) % LOOKAHEAD]);
        }
        self.ring[self.pos % LOOKAHEAD] = next;
        self.pos = (self.pos + 1) % LOOKAHEAD;
    }
}

/// A job's command source: the plain random pattern's lean one, or the general generator.
pub(crate) enum JobSource {
    Uniform(Box<UniformSource>),
    General(Box<GenSource>),
}

impl JobSource {
    /// The source of a plan's generator: the plain random pattern's lean one if it is that.
    pub(crate) fn of(gen: crate::workload::Generator, rng: &mut Rng) -> Self {
        match gen.uniform() {
            Some((kind, start_unit, blocks, bs_units)) => JobSource::Uniform(Box::new(UniformSource::new(kind, start_unit, blocks, bs_units, rng))),
            None => JobSource::General(Box::new(GenSource::new(gen, rng))),
        }
    }

    /// The next command (a generator always has one). Built field by field: a copy of the
    /// whole command (its padding included) stalls the store forwarding of the host loop.
    #[inline(always)]
    pub(crate) fn next_command(&mut self) -> Command {
        match self {
            JobSource::Uniform(u) => Command { kind: u.kind, unit: u.ring[u.pos % LOOKAHEAD], units: u.bs_units },
            JobSource::General(g) => {
                let c = &g.ring[g.pos % LOOKAHEAD];
                Command { kind: c.kind, unit: c.unit, units: c.units }
            }
        }
    }
}

impl Source for JobSource {
    #[inline]
    fn peek(&mut self) -> Option<Command> {
        match self {
            JobSource::Uniform(u) => u.peek(),
            JobSource::General(g) => g.peek(),
        }
    }

    #[inline]
    fn advance(&mut self, rng: &mut Rng, ftl: &Ftl) {
        match self {
            JobSource::Uniform(u) => u.advance(rng, ftl),
            JobSource::General(g) => g.advance(rng, ftl),
        }
    }
}

/// The source the host loop runs on. One loop (not one per source type) keeps a single call
/// site of the drive's write path, which the compiler then inlines into it.
pub(crate) enum Sources<'s, 'c> {
    Uniform(&'s mut UniformSource),
    General(&'s mut GenSource),
    Chunk(&'s mut ChunkSource<'c>),
}

impl Source for Sources<'_, '_> {
    #[inline(always)]
    fn peek(&mut self) -> Option<Command> {
        match self {
            Sources::Uniform(s) => s.peek(),
            Sources::General(s) => s.peek(),
            Sources::Chunk(s) => s.peek(),
        }
    }

    /// The plain random pattern's generation is inlined; the others are calls, which keeps
    /// the loop small enough for the compiler to keep its state in registers.
    #[inline(always)]
    fn advance(&mut self, rng: &mut Rng, ftl: &Ftl) {
        match self {
            Sources::Uniform(s) => s.advance(rng, ftl),
            Sources::General(s) => advance_out_of_line(*s, rng, ftl),
            Sources::Chunk(s) => advance_out_of_line(*s, rng, ftl),
        }
    }
}

#[inline(never)]
pub(crate) fn advance_out_of_line<S: Source>(s: &mut S, rng: &mut Rng, ftl: &Ftl) {
    s.advance(rng, ftl)
}


/// The commands of one replay chunk, checked against the drive as they are taken. Looks
/// ahead in the chunk to prefetch the mapping entries the coming commands will touch, as a
/// workload's generator does.
pub(crate) struct ChunkSource<'a> {
    pub(crate) cmds: &'a [Command],
    pub(crate) pos: usize,
    pub(crate) user_units: u64,
    /// The first command refused (index in the chunk and why).
    pub(crate) error: Option<String>,
}

/// How far ahead in a chunk the L2P entries of a command are prefetched, (half way) the
/// valid-bit words and block records of the copies it will invalidate, and (a quarter of
/// the way) the greedy bucket links those invalidations will touch.
pub(crate) const AHEAD: usize = 16;
/// Units of a command whose old copies are prefetched, at most (each valid-bit word and block
/// record once: a long command's old copies mostly share them). Fetching all of a command's
/// rather than its first 4 saved 8 % of the replay's CPU time at 300 GB into the JEDEC-like trace.
pub(crate) const AHEAD_UNITS: u64 = 64;

impl ChunkSource<'_> {
    /// The first unit and the number of units (at most [`AHEAD_UNITS`]) whose old copies the
    /// command `ahead` commands on will invalidate; None for a read or flush, or past the
    /// chunk's end or the drive's.
    #[inline(always)]
    fn old_copies(&self, ahead: usize) -> Option<(u64, u64)> {
        let c = self.cmds.get(self.pos + ahead)?;
        if !matches!(c.kind, CmdKind::Write | CmdKind::Trim) || c.unit >= self.user_units {
            return None;
        }
        let end = c.unit.saturating_add(c.units.min(AHEAD_UNITS)).min(self.user_units);
        Some((c.unit, end - c.unit))
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn refuse(&mut self, c: Command) {
        self.error = Some(format!("command {}: {} units at unit {} do not fit the drive's {} units", self.pos, c.units, c.unit, self.user_units));
    }
}

impl Source for ChunkSource<'_> {
    #[inline]
    fn peek(&mut self) -> Option<Command> {
        let c = *self.cmds.get(self.pos)?;
        if c.kind != CmdKind::Flush && (c.units == 0 || c.unit.checked_add(c.units).is_none_or(|end| end > self.user_units)) {
            self.refuse(c);
            return None;
        }
        Some(c)
    }

    #[inline]
    fn advance(&mut self, _rng: &mut crate::rng::Rng, ftl: &Ftl) {
        self.pos += 1;
        let user = self.user_units;
        if let Some(c) = self.cmds.get(self.pos + AHEAD) {
            if c.kind != CmdKind::Flush && c.unit < user {
                ftl.prefetch(c.unit);
                let last = c.unit.saturating_add(c.units.saturating_sub(1)).min(user - 1);
                // The entries of a long command may span a second cache line (16 per line).
                if last / 16 != c.unit / 16 {
                    ftl.prefetch(last);
                }
            }
        }
        if let Some((unit, units)) = self.old_copies(AHEAD / 2) {
            ftl.prefetch_old_range(unit, units);
        }
        if let Some((unit, _)) = self.old_copies(AHEAD / 4) {
            ftl.prefetch_old_links(unit);
        }
    }
}
