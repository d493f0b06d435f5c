//! The per-packet path allocates nothing: every queue discipline, with and without ECN, once its
//! buffers have grown to their working size.
//!
//! The test binary counts the allocations of the whole process (a counting wrapper around the
//! system allocator). Each scenario is run for a time `T` and for `2T`: the second run carries
//! tens of thousands more packets through the queue, the AQM, the TCP endpoints and the event
//! list, and may make only the few allocations more that a longer run's grown buffers need (see
//! [`GROWTH_ALLOWANCE`]), never one per packet.
//! Time series are off: they reserve room for every sample up front, so their allocations
//! would be the same in number but are not what is checked here.

mod common;

use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// More allocations and reallocations the run of `2T` may make than the run of `T`. Measured:
/// 0 to 18 more for each doubling of the run (10, 20, 40 and 80 s), whose packets grow by
/// 350,000 to 520,000 each time: buffers sized by the largest window or delay seen so far,
/// which a longer run raises now and then (a doubling, a delay histogram's octave). One
/// allocation per packet would be hundreds of thousands more, one per round trip a thousand.
const GROWTH_ALLOWANCE: usize = 32;

/// Allocations and reallocations made by a run of `spec` (results included), and the packets
/// it transmitted.
fn allocations(spec: &ScenarioSpec) -> (usize, u64) {
    let region = Region::new(GLOBAL);
    let result = run(spec).expect("a valid scenario");
    let change = region.change();
    let packets = result.channels.iter().map(|c| c.sent_packets).sum();
    (change.allocations + change.reallocations, packets)
}

// One test: the count is the process's, and tests in parallel threads would add to each other's.
#[test]
fn no_queue_discipline_allocates_per_packet() {
    let classic = TcpSpec { ecn: TcpEcn::Classic, ..TcpSpec::default() };
    let l4s = TcpSpec { ecn: TcpEcn::L4s, ..TcpSpec::default() };
    let cases: [(&str, QueueSpec, CcaKind, &TcpSpec); 11] = [
        ("fifo", QueueSpec::fifo_packets(1000), CcaKind::Reno, &TcpSpec::default()),
        ("red", red(83, 249, true, false), CcaKind::Reno, &TcpSpec::default()),
        ("red ecn", red(83, 249, true, true), CcaKind::Reno, &classic),
        ("codel", codel(1000, false), CcaKind::Reno, &TcpSpec::default()),
        ("codel ecn", codel(1000, true), CcaKind::Reno, &classic),
        ("pie", pie(1000, false), CcaKind::Cubic, &TcpSpec::default()),
        ("pie ecn", pie(1000, true), CcaKind::Cubic, &classic),
        ("fq_codel", fq_codel(1000, 1), CcaKind::Cubic, &TcpSpec::default()),
        ("fq_pie", fq_pie(1000, 64), CcaKind::Cubic, &TcpSpec::default()),
        ("dualpi2", dualpi2(DualPi2Scheduler::default()), CcaKind::Prague, &l4s),
        ("dctcp step", step_marking(65), CcaKind::Dctcp, &TcpSpec { ecn: TcpEcn::Dctcp, ..TcpSpec::default() }),
    ];
    for (name, queue, cca, tcp) in cases {
        let scenario = |seconds: u64| {
            let mut spec = four_flows_at_100ms(queue.clone(), cca, tcp.clone(), 1, seconds * SEC, 100 * MS);
            spec.sample_interval_ns = None;
            spec
        };
        let (short, short_packets) = allocations(&scenario(10));
        let (long, long_packets) = allocations(&scenario(20));
        let more_packets = long_packets - short_packets;
        eprintln!("{name}: {short} allocations in 10 s, {long} in 20 s, {more_packets} more packets");
        assert!(more_packets > 50_000, "{name}: the longer run carries more packets ({more_packets})");
        assert!(
            long <= short + GROWTH_ALLOWANCE,
            "{name}: {} more allocations for {more_packets} more packets",
            long.saturating_sub(short)
        );
    }
}
