//! One drive's FTL made equal to another's, reusing its tables: a drive whose timing model
//! followed another's FTL through a shared replay takes that FTL's state at the end.

use super::Ftl;

impl Ftl {
    /// Makes this FTL the same as `other` (a drive of the same geometry), every field; the
    /// large tables are copied into this one's memory (no allocation, huge pages kept).
    pub(crate) fn copy_from(&mut self, other: &Ftl) {
        assert_eq!(self.geo, other.geo, "an FTL takes the state of a drive of its own geometry only");
        // Every field by name: a new one must be copied here too.
        let Ftl {
            geo: _,
            l2p,
            p2l,
            valid,
            payload,
            blocks,
            meta,
            pools,
            counters,
            mapped,
            pending,
            scratch: _,
            scratch_slots: _,
            div_spb: _,
            div_bpp: _,
            div_upp: _,
            page_lsbs: _,
            rng,
            free_blocks_total,
            sort_open,
            sort_scan,
            sort_next_pool,
            companions,
            out_of_space,
            fdp,
            zone_blocks,
            stream_map,
        } = other;
        self.l2p.clone_from(l2p);
        self.p2l.clone_from(p2l);
        self.valid.0.clone_from(&valid.0);
        self.payload.clone_from(payload);
        self.blocks.clone_from(blocks);
        self.meta.clone_from(meta);
        self.pools.clone_from(pools);
        self.counters = *counters;
        self.mapped = *mapped;
        self.pending.clone_from(pending);
        self.rng.clone_from(rng);
        self.free_blocks_total = *free_blocks_total;
        self.sort_open.clone_from(sort_open);
        self.sort_scan.clone_from(sort_scan);
        self.sort_next_pool.clone_from(sort_next_pool);
        self.companions = *companions;
        self.out_of_space.clone_from(out_of_space);
        self.fdp.clone_from(fdp);
        self.zone_blocks.clone_from(zone_blocks);
        self.stream_map = *stream_map;
    }

    /// Whether this FTL holds the same data where `other` does, with the same counters and
    /// free blocks: the map, the valid bits and every block's valid count and state (a check
    /// before a drive follows another's FTL; 0.04 s at 256 GB).
    pub(crate) fn same_state(&self, other: &Ftl) -> bool {
        self.geo == other.geo
            && self.counters == other.counters
            && self.mapped == other.mapped
            && self.free_blocks_total == other.free_blocks_total
            && self.blocks.iter().zip(&other.blocks).all(|(a, b)| a.valid == b.valid && a.state == b.state)
            && self.l2p == other.l2p
            && self.valid.0 == other.valid.0
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::ftl::Ftl;

    fn drive() -> crate::config::Geometry {
        let mut cfg = Config::default();
        for (k, v) in [("channels", "2"), ("dies_per_channel", "1"), ("planes_per_die", "1"), ("blocks_per_plane", "32"), ("pages_per_block", "8"), ("page_size_bytes", "4096"), ("user_capacity_bytes", "1572864")] {
            cfg.set(k, v).unwrap();
        }
        cfg.validate().unwrap()
    }

    /// Random writes and TRIMs with GC on an FTL; `n` writes from seed `seed`.
    fn churn(ftl: &mut Ftl, seed: u64, n: u64) {
        let mut rng = crate::rng::Rng::new(seed);
        let units = ftl.geo.user_units;
        for i in 0..n {
            let lpn = rng.next_u64() % units;
            if i % 7 == 3 {
                ftl.trim(lpn);
            } else {
                ftl.write_and_take_gc_work(lpn, (i % 2) as usize, i);
            }
        }
    }

    #[test]
    fn a_copied_ftl_goes_on_as_the_original() {
        let geo = drive();
        let (mut a, mut b) = (Ftl::new(&geo, true), Ftl::new(&geo, true));
        churn(&mut a, 1, 3_000);
        churn(&mut b, 2, 1_000);
        assert!(!a.same_state(&b));
        b.copy_from(&a);
        assert!(a.same_state(&b));
        // Both go on alike: the same GC decisions, payloads and counters.
        churn(&mut a, 3, 2_000);
        churn(&mut b, 3, 2_000);
        assert!(a.same_state(&b));
        assert_eq!(a.counters(), b.counters());
        assert!(a.counters().gc_runs > 0, "the churn collected garbage");
        for lpn in 0..geo.user_units {
            assert_eq!(a.lookup(lpn), b.lookup(lpn));
        }
        // One write more on one side: the check sees it.
        churn(&mut a, 4, 1);
        assert!(!a.same_state(&b));
    }
}
