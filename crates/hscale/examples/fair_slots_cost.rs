//! What tenants (issue 31) add to a statement when no limit is reached.
//! Cost of a pool slot on the fast path (a free slot, nobody waiting):
//! take and give back, with the fair queue (`backend/fair.rs`) and with the
//! tokio semaphore it replaced (`try_acquire` + `add_permits`). Run:
//! `cargo run --release -p hscale --example fair_slots_cost`. Prints ns per
//! take + give back.

use std::hint::black_box;
use std::time::Instant;

use hscale::backend::fair::{Claim, FairSlots, Priority};

const N: u32 = 5_000_000;

fn per_op(f: impl Fn()) -> f64 {
    for _ in 0..N / 10 {
        f();
    }
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..N {
                f();
            }
            t.elapsed().as_nanos() as f64 / f64::from(N)
        })
        .fold(f64::MAX, f64::min)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let fair = FairSlots::new(16);
    let claim = Claim {
        index: 3,
        priority: Priority::Normal,
        share_permille: 1000,
    };
    // Another user holding a few slots: the queue has more than one user.
    for _ in 0..4 {
        assert!(rt.block_on(fair.take(Claim { index: 2, ..claim }, std::time::Duration::ZERO)));
    }
    let fair_ns = per_op(|| {
        let got = rt.block_on(fair.take(black_box(claim), std::time::Duration::from_secs(1)));
        assert!(got);
        fair.give_back(black_box(claim.index));
    });
    let sem = tokio::sync::Semaphore::new(16);
    let sem_ns = per_op(|| {
        let p = black_box(&sem).try_acquire().expect("free");
        p.forget();
        sem.add_permits(1);
    });
    let noop_ns = per_op(|| {
        let got = rt.block_on(async { black_box(true) });
        assert!(got);
    });
    let config = hscale::Config::parse("[[users]]\nname = \"a\"\n").expect("config");
    let tenants = hscale::tenant::Tenants::new(&config);
    let user = tenants.user("a");
    let took = std::time::Duration::from_micros(250);
    let record_ns = per_op(|| user.record(0, black_box(took), Instant::now()));
    let clock_ns = per_op(|| {
        black_box(Instant::now());
    });
    let admit_ns = per_op(|| {
        let ok = rt.block_on(user.admit());
        assert!(ok.is_ok());
    });
    println!("fast path, ns per take + give back (best of 5 x {N}):");
    println!("  fair queue (block_on)          {fair_ns:6.1}");
    println!("  block_on of a ready future     {noop_ns:6.1}");
    println!("  fair queue alone (difference)  {:6.1}", fair_ns - noop_ns);
    println!("  tokio semaphore (the old path) {sem_ns:6.1}");
    println!("per statement, ns:");
    println!(
        "  TenantState::record (minus a clock read) {:6.1}",
        record_ns - clock_ns
    );
    println!("  TenantState::admit, no rate (block_on)   {admit_ns:6.1}");
}
