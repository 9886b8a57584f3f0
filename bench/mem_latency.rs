//! This machine's memory latency by working-set size: a random pointer chase over 64-byte lines
//! (one load waits for the one before: the full latency of a miss), and the same with several
//! independent chases interleaved (how much of it overlapping loads hide). bench/mem_latency.sh
//! builds and runs it; bench/README.md uses it to bound what 1000 flows can cost per event.
//! Run with bench/mem_latency.sh.

use std::time::Instant;

const LINE: usize = 64;

/// A random cyclic order of `lines` line indices (Sattolo's algorithm, xorshift: no crates).
fn cycle(lines: usize, seed: u64) -> Vec<usize> {
    let mut s = seed;
    let mut rand = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut order: Vec<usize> = (0..lines).collect();
    for i in (1..lines).rev() {
        let j = (rand() % i as u64) as usize;
        order.swap(i, j);
    }
    // next[order[k]] = order[k + 1]: one cycle through every line.
    let mut next = vec![0; lines];
    for k in 0..lines {
        next[order[k]] = order[(k + 1) % lines];
    }
    next
}

extern "C" {
    fn madvise(addr: *mut u8, len: usize, advice: i32) -> i32;
}
/// Linux MADV_HUGEPAGE: back the range with 2 MB pages where the kernel can (transparent huge
/// pages in "madvise" mode, as here): one TLB entry per 2 MB instead of per 4 KB.
const MADV_HUGEPAGE: i32 = 14;

/// Nanoseconds per load with `chains` independent chases over `bytes` bytes, on 4 KB pages or
/// (`huge`) asking for 2 MB ones.
fn chase(bytes: usize, chains: usize, steps: usize, huge: bool) -> f64 {
    let lines = bytes / LINE;
    // One u64 per line holds the next line's index; the rest of the line is padding.
    let words = LINE / 8;
    // 2 MB-aligned start inside a larger allocation, so whole huge pages can cover it.
    let mut backing = vec![0u64; lines * words + (2 << 20) / 8];
    let off = backing.as_ptr().align_offset(2 << 20);
    let mem = &mut backing[off..off + lines * words];
    if huge {
        // SAFETY: advice on memory this function owns; it changes no contents.
        unsafe { madvise(mem.as_mut_ptr() as *mut u8, bytes, MADV_HUGEPAGE) };
    }
    for (i, n) in cycle(lines, 0x9e37_79b9_7f4a_7c15).into_iter().enumerate() {
        mem[i * words] = n as u64;
    }
    let mut at: Vec<usize> = (0..chains).map(|c| c * lines / chains).collect();
    // Warm up: one pass over the set (or a million loads, whichever is less).
    for _ in 0..lines.min(1 << 20) {
        at[0] = mem[at[0] * words] as usize;
    }
    let t0 = Instant::now();
    for _ in 0..steps {
        for a in at.iter_mut() {
            *a = mem[*a * words] as usize;
        }
    }
    let ns = t0.elapsed().as_nanos() as f64;
    // Keep the result alive so the loop is not removed.
    std::hint::black_box(&at);
    ns / (steps * chains) as f64
}

fn main() {
    println!("pages\tworking_set_kb\tns_per_load_1_chain\tns_per_load_4_chains\tns_per_load_8_chains");
    for huge in [false, true] {
        for kb in [16, 256, 512, 1024, 4096, 12_288, 32_768, 131_072] {
            let bytes = kb * 1024;
            let steps = 4_000_000;
            println!(
                "{}\t{kb}\t{:.1}\t{:.1}\t{:.1}",
                if huge { "2M" } else { "4K" },
                chase(bytes, 1, steps, huge),
                chase(bytes, 4, steps / 4, huge),
                chase(bytes, 8, steps / 8, huge)
            );
        }
    }
}
