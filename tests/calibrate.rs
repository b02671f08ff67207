//! `coalesce calibrate`'s GPU code without a GPU: the pointer-chase kernel on the CPU
//! emulator, through the cycle the host builds for it. (The fits are unit tests in
//! host/src/calibrate/; the command's errors are in tests/cli.rs.)

mod common;

use coalesce::calibrate::{CHASE_SPACING, chase_buffer, follow};
use kernels::entry;
use kernels::gpu::emu::{Dim3, LaunchConfig, Op, launch};
use kernels::gpu::{Float4, Global, GlobalMut};
use kernels::handle::KernelInfo;

/// Runs `chase(steps, next, cursor)` on the emulator over a whole block and returns
/// the access log.
fn chase(next: &[u32], cursor: &mut [u32; 1], steps: usize, threads: u32) -> Vec<kernels::gpu::emu::Access> {
    let args = (
        steps,
        Global::from_ptr(next.as_ptr()),
        GlobalMut::from_ptr(cursor.as_mut_ptr()),
    );
    // SAFETY: live host buffers; every index in next is inside it.
    common::recorded(1, threads, unsafe { entry::chase.bind(args) })
}

#[test]
fn the_chase_follows_the_cycle_and_goes_on_where_it_stopped() {
    let slots = 64;
    let next = chase_buffer(slots, 11).unwrap();
    let mut cursor = [0u32];
    let log = chase(&next, &mut cursor, 100, 32);
    assert_eq!(cursor[0], follow(&next, 0, 100));
    assert_ne!(cursor[0], 0);
    // One thread did the work: the cursor's load, 100 hops, the cursor's store.
    assert!(log.iter().all(|a| a.thread == 0), "only thread 0 touches memory");
    let mut hops: Vec<(usize, usize)> = log
        .iter()
        .filter(|a| a.op == Op::Load && a.addr != cursor.as_ptr() as usize)
        .map(|a| (a.occurrence, (a.addr - next.as_ptr() as usize) / 4))
        .collect();
    hops.sort();
    let hops: Vec<usize> = hops.into_iter().map(|(_, i)| i).collect();
    assert_eq!(hops.len(), 100);
    let mut j = 0;
    for (step, &at) in hops.iter().enumerate() {
        assert_eq!(
            at, j as usize,
            "hop {step} reads the index the one before returned"
        );
        assert_eq!(
            at % CHASE_SPACING,
            0,
            "every hop at the start of its own 128-byte line"
        );
        j = next[at];
    }
    assert_eq!(log.iter().filter(|a| a.op == Op::Store).count(), 1);
    // A second launch continues: 100 + 28 hops are two whole turns of the 64-slot cycle.
    chase(&next, &mut cursor, 28, 1);
    assert_eq!(cursor[0], 0);
    // Zero steps store the cursor unchanged.
    chase(&next, &mut cursor, 0, 1);
    assert_eq!(cursor[0], 0);
}

#[test]
fn the_chase_is_in_the_ptx() {
    assert!(coalesce::ptx::entry_points(coalesce::ptx::PTX).contains(&"chase"));
}

/// A quick calibration on the GPU: every kernel validated, every parameter in the
/// range a current NVIDIA GPU gives, and a profile the loader accepts.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_quick_calibration_is_plausible() {
    use coalesce::calibrate::{Effort, calibrate, summary};
    let gpu = common::gpu();
    let effort = Effort { quick: true };
    let mut steps = 0;
    let c = calibrate(&gpu, effort, |_| steps += 1).unwrap();
    assert_eq!(steps, effort.steps());
    assert!(c.failures.is_empty(), "{:?}", c.failures);
    let p = &c.profile;
    let text = summary(p, &c.notes);
    assert!(p.copy_gb_per_s > 100.0, "{text}");
    assert!([32, 64, 128].contains(&p.dram_read_granularity), "{text}");
    assert!((100.0..5000.0).contains(&p.idle_latency_ns), "{text}");
    assert!((100.0..20_000.0).contains(&p.loaded_latency_ns), "{text}");
    assert_eq!(p.max_threads_per_sm, gpu.info.max_threads_per_sm);
    assert!(p.max_threads_per_sm >= 1024, "{text}");
    assert_eq!(p.stride_sweep.len(), effort.strides().len());
    assert_eq!(p.inflight_sweep.len(), 8);
    // Every pitch point fits in an H100's or H200's memory at the quick effort, and each
    // is timed at every iteration count.
    let sweep = p.pitch_sweep.as_deref().unwrap_or_default();
    assert_eq!(
        sweep.len(),
        coalesce::calibrate::pitch_grid(effort.quick).len() * coalesce::calibrate::pitch::ITERATIONS.len(),
        "{text}"
    );
    assert!(
        sweep
            .iter()
            .all(|q| q.read_gb_per_s > 1.0 && q.write_gb_per_s > 1.0 && q.update_gb_per_s > 1.0),
        "{text}"
    );
    // Each stream spread at every distance, each point with a spread and a rate.
    let spread = p.spread_sweep.as_deref().unwrap_or_default();
    assert_eq!(
        spread.len(),
        2 * coalesce::calibrate::spread::apart(effort.quick).len(),
        "{text}"
    );
    assert!(
        spread.iter().all(|q| q.spread() >= 1.0 && q.gb_per_s > 1.0),
        "{text}"
    );
    assert!(p.compute.is_some(), "{text}");
    let json = serde_json::to_string(p).unwrap();
    let back = coalesce::profile::Profile::parse(&json, "test").unwrap();
    assert_eq!(&back, p);
    println!("{text}");
}

/// The compute rates (kernels/src/calibrate/pipes.rs), measured as a quick calibration does:
/// every kernel validated, and each rate within what the device can do at its highest
/// clock (device attribute CLOCK_RATE), per SM per clock: at most 4 warp FFMAs (128
/// FP32 lanes), 4 warp instructions issued (4 schedulers), one m16n8k8 TF32 MMA and
/// 2048 wgmma TF32 FLOPs and 4096 BF16 ones, of N 256 or 128 (an H100 SXM's dense peaks), each x 1.05; and at least a
/// quarter of that (the MMA: a tenth, as an A100 does half an H100's per clock).
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_compute_rates_are_plausible_for_this_gpu() {
    use coalesce::calibrate::{Effort, compute};
    use cust::device::{Device, DeviceAttribute};
    let gpu = common::gpu();
    let clock_khz = Device::get_device(gpu.info.ordinal)
        .unwrap()
        .get_attribute(DeviceAttribute::ClockRate)
        .unwrap();
    let ghz = f64::from(clock_khz) / 1e6;
    let mut steps = Vec::new();
    let (c, runs, failures) = compute::compute_rates(&gpu, Effort { quick: true }, &mut |s: &str| {
        steps.push(s.to_string())
    })
    .unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(steps.len(), compute::COMPUTE.len());
    let text = format!("{c:?}\n{runs:?}\nclock {ghz} GHz");
    let per_clock = |rate: f64, most: f64, least: f64| {
        let r = rate / ghz;
        assert!(
            r <= 1.05 * most && r >= least * most,
            "{r} per clock, not in {least} x {most}..1.05 x {most}: {text}"
        );
    };
    per_clock(c.fma_per_ns_per_sm, 4.0, 0.25);
    per_clock(c.issue_per_ns_per_sm, 4.0, 0.25);
    let (major, _) = gpu.info.compute_capability;
    match c.mma_tf32_per_ns_per_sm {
        Some(mma) => per_clock(mma, 1.0, 0.1),
        None => assert!(major < 8, "{text}"),
    }
    match c.wgmma_tf32_flops_per_ns_per_sm {
        Some(wgmma) => per_clock(wgmma, 2048.0, 0.25),
        None => assert_ne!(gpu.info.compute_capability, (9, 0), "{text}"),
    }
    match c.wgmma_16bit_flops_per_ns_per_sm {
        Some(wgmma) => per_clock(wgmma, 4096.0, 0.25),
        None => assert_ne!(gpu.info.compute_capability, (9, 0), "{text}"),
    }
    // The N = 128 shape measured where the N = 256 one is, under the same peak.
    match c.wgmma_16bit_n128_flops_per_ns_per_sm {
        Some(wgmma) => per_clock(wgmma, 4096.0, 0.25),
        None => assert!(c.wgmma_16bit_flops_per_ns_per_sm.is_none(), "{text}"),
    }
    // The L2 serves reads faster than half the DRAM's peak, and at most 128 bytes per
    // clock per SM.
    let dram = gpu.info.peak_gb_per_s().unwrap_or(500.0);
    let l2_per_clock = c.l2_read_gb_per_s / f64::from(gpu.info.sm_count) / ghz;
    assert!(c.l2_read_gb_per_s > 0.5 * dram && l2_per_clock <= 128.0, "{text}");
    // An FFMA waits 2 to 16 clocks for the one before; a shared load 15 to 100.
    let clocks = |ns: f64| ns * ghz;
    assert!((2.0..=16.0).contains(&clocks(c.fma_latency_ns)), "{text}");
    assert!((15.0..=100.0).contains(&clocks(c.shared_latency_ns)), "{text}");
    println!("{text}");
}

/// The power runs on this GPU: every kernel validated, a fit whose base is under the
/// limit and every run within the limit (plus the counter's slack), and energies in
/// the range a GPU of the 2020s spends.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_power_runs_fit_energies_under_the_boards_limit() {
    use coalesce::calibrate::{Effort, power};
    let gpu = common::gpu();
    let mut steps = Vec::new();
    let (fit, failures) = power::power_rates(&gpu, Effort { quick: true }, &mut |s: &str| {
        steps.push(s.to_string())
    })
    .unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(steps.len(), coalesce::calibrate::compute::power_runs().len());
    let p = fit.unwrap();
    let text = format!("{p:?}");
    assert!(p.base_w > 20.0 && p.base_w < p.limit_w, "{text}");
    for r in &p.runs {
        assert!(r.watts <= 1.1 * p.limit_w && r.seconds >= 0.3, "{text}");
    }
    // pJ: a warp FFMA 32 lanes' worth of about 1 to 100 pJ each; an L2 or DRAM byte 1
    // to 500; a wgmma FLOP 0.05 to 10.
    assert!((32.0..=3200.0).contains(&p.ffma_pj), "{text}");
    assert!((1.0..=500.0).contains(&p.l2_pj_per_byte), "{text}");
    assert!((1.0..=500.0).contains(&p.dram_pj_per_byte), "{text}");
    for w in [p.wgmma_tf32_pj_per_flop, p.wgmma_16bit_pj_per_flop]
        .into_iter()
        .flatten()
    {
        assert!((0.05..=10.0).contains(&w), "{text}");
    }
    println!("{text}");
}

/// The command as a user runs it: the file it writes is a profile of this GPU.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn calibrate_quick_writes_a_profile_of_this_gpu() {
    let dir = common::fresh_dir("calibrate-gpu");
    let file = dir.join("profile.json");
    let out = common::coalesce()
        .args(["calibrate", "--quick", "--quiet", "--out", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("dram_read_granularity"), "{stdout}");
    assert!(stdout.contains("fma_per_ns_per_sm"), "{stdout}");
    let name = coalesce::device::Gpu::open(0).unwrap().info.name;
    let profile = coalesce::profile::Profile::load(&file).unwrap();
    profile.for_device(&name, "profile.json").unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One 128-byte line of host memory, 128-byte aligned as a device allocation is, so
/// lines and sectors fall as on a GPU: 8 float4s.
#[derive(Clone, Copy)]
#[repr(align(128))]
struct Line([[f32; 4]; 8]);

const ZERO_LINE: Line = Line([[0.0; 4]; 8]);

/// Runs `kernel` (a kernel bound to live host buffers of the sizes it indexes) on the
/// emulator over `grid` blocks of `block` threads and counts its traffic as `explain`
/// does.
fn traffic_of(
    kernel: impl Fn() + Sync,
    grid: u32,
    block: u32,
) -> coalesce::explain::emulate::traffic::Traffic {
    let log = common::recorded(grid, block, kernel);
    coalesce::explain::emulate::traffic::traffic(&log)
}

/// Runs one of calibrate's on-chip kernels (kernels/src/calibrate/throughput.rs) on the emulator
/// over `blocks` blocks and counts its traffic as `explain` does: the units its rate is
/// stated in are the units the model counts.
fn on_chip(kernel: &KernelInfo, blocks: u32, rounds: usize) -> coalesce::explain::emulate::traffic::Traffic {
    use kernels::calibrate::throughput::{BLOCK, STORE_MASK, STORE_WINDOW};
    // Only its bytes are used, through the pointers below.
    let mut window = vec![ZERO_LINE; blocks as usize * STORE_WINDOW / 32];
    let mut out = vec![0f32; (blocks * BLOCK) as usize];
    let window_in = Global::from_ptr(window.as_ptr().cast::<f32>());
    let window_out = GlobalMut::from_ptr(window.as_mut_ptr().cast::<f32>());
    let out = GlobalMut::from_ptr(out.as_mut_ptr());
    // SAFETY (each): the window and out hold what `blocks` blocks index.
    let run: Box<dyn Fn() + Sync> = unsafe {
        if kernel == entry::lines_load.info() {
            Box::new(entry::lines_load.bind((rounds, window_in, out)))
        } else if kernel == entry::lines_store.info() {
            Box::new(entry::lines_store.bind((rounds, STORE_MASK, window_out)))
        } else {
            Box::new(entry::bank_conflicts.bind((rounds, out)))
        }
    };
    traffic_of(run, blocks, BLOCK)
}

#[test]
fn the_on_chip_kernels_touch_what_their_rates_are_stated_in() {
    use coalesce::calibrate::on_chip_units;
    let (blocks, rounds) = (3, 40);
    // Loads: 32 lines per warp request, and one coalesced store of each thread's sum.
    let t = on_chip(&entry::lines_load, blocks, rounds);
    let warps = u64::from(blocks) * 8;
    assert_eq!(t.global_requests, [warps * rounds as u64, warps]);
    assert_eq!(
        t.global_lines[0],
        on_chip_units(&entry::lines_load, blocks, rounds)
    );
    assert_eq!(t.global_sectors[0], t.global_lines[0], "one sector per line");
    // Stores: 32 lines per request, one partial sector each; no loads.
    let t = on_chip(&entry::lines_store, blocks, rounds);
    assert_eq!(t.global_requests, [0, warps * rounds as u64]);
    assert_eq!(
        t.global_lines[1],
        on_chip_units(&entry::lines_store, blocks, rounds)
    );
    assert_eq!(t.global_sectors[1], t.global_lines[1]);
    // Each of a block's 8 warps writes one sector of each of its own 32 lines (256
    // sectors a block, no line shared), and nothing outside its window.
    assert_eq!(t.write_sectors, u64::from(blocks) * 256);
    // Shared: 32 wavefronts per load request (a 32-way conflict), 1 per fill store.
    let t = on_chip(&entry::bank_conflicts, blocks, rounds);
    assert_eq!(t.shared_requests, [warps * rounds as u64, u64::from(blocks) * 32]);
    assert_eq!(t.shared_wavefronts[0], 32 * t.shared_requests[0]);
    assert_eq!(t.shared_wavefronts[1], t.shared_requests[1]);
    assert_eq!(
        t.shared_wavefronts[0] + t.shared_wavefronts[1],
        on_chip_units(&entry::bank_conflicts, blocks, rounds)
    );
}

/// Blocks of the pitch kernels for `threads` threads.
fn pitch_blocks(threads: usize) -> u32 {
    threads.div_ceil(kernels::calibrate::pitch::BLOCK as usize) as u32
}

/// Runs `pitch_read` on the emulator over a rows x pitch view of `src` (float4s) and
/// returns the sums and the traffic as `explain` counts it.
fn pitch_read(
    src: &[[f32; 4]],
    rows: usize,
    pitch: usize,
    cols: usize,
) -> (Vec<f32>, coalesce::explain::emulate::traffic::Traffic) {
    let mut buf = vec![ZERO_LINE; src.len().div_ceil(8)];
    for (i, v) in src.iter().enumerate() {
        buf[i / 8].0[i % 8] = *v;
    }
    let threads = rows * cols;
    let mut out = vec![0f32; threads];
    let args = (
        rows.trailing_zeros(),
        pitch,
        cols,
        Global::from_ptr(buf.as_ptr().cast::<Float4>()),
        GlobalMut::from_ptr(out.as_mut_ptr()),
    );
    // SAFETY: buf holds rows x pitch float4s, out one sum per thread.
    let run = unsafe { entry::pitch_read.bind(args) };
    let t = traffic_of(run, pitch_blocks(threads), kernels::calibrate::pitch::BLOCK);
    (out, t)
}

#[test]
fn the_pitch_gather_reads_down_columns_one_pitch_apart() {
    // 64 rows of 40 float4s (640 B apart), 24 columns read: 1536 threads, 6 blocks.
    let (rows, pitch, cols) = (64, 40, 24);
    let src: Vec<[f32; 4]> = (0..rows * pitch).map(|i| [i as f32, 1.0, 2.0, 0.5]).collect();
    let (sums, t) = pitch_read(&src, rows, pitch, cols);
    for (g, s) in sums.iter().enumerate() {
        let (r, c) = (g % rows, g / rows);
        assert_eq!(*s, (r * pitch + c) as f32 + 3.5, "thread {g}");
    }
    // Each warp reads 32 rows of one column: 32 sectors and 32 lines a request, and
    // stores its 32 sums in one line.
    let warps = (rows * cols / 32) as u64;
    assert_eq!(t.global_requests, [warps, warps]);
    assert_eq!(t.global_sectors[0], 32 * warps);
    assert_eq!(t.global_lines[0], 32 * warps);
    assert_eq!(t.useful_read, 16 * (rows * cols) as u64);
    // Three columns: 192 threads in one block of 256; the 64 past rows x cols read nothing.
    let (sums, t) = pitch_read(&src, rows, pitch, 3);
    assert_eq!(sums.len(), 192);
    assert_eq!(t.global_requests[0], 6);
}

#[test]
fn the_pitch_write_stores_down_the_same_columns() {
    let (rows, pitch, cols) = (64usize, 40usize, 24usize);
    let mut buf = vec![ZERO_LINE; rows * pitch / 8];
    let dst = GlobalMut::from_ptr(buf.as_mut_ptr().cast::<Float4>());
    // SAFETY: buf holds rows x pitch float4s.
    let run = unsafe { entry::pitch_write.bind((rows.trailing_zeros(), pitch, cols, 2.5, dst)) };
    let t = traffic_of(run, pitch_blocks(rows * cols), kernels::calibrate::pitch::BLOCK);
    for i in 0..rows * pitch {
        let want = if i % pitch < cols { 2.5 } else { 0.0 };
        assert_eq!(buf[i / 8].0[i % 8], [want; 4], "float4 {i}");
    }
    // 32 lanes one pitch apart: 32 sectors a store request, half of each written.
    let warps = (rows * cols / 32) as u64;
    assert_eq!(t.global_requests, [0, warps]);
    assert_eq!(t.global_sectors[1], 32 * warps);
}

/// The view the pitch kernels' emulator tests walk: 64 rows of 40 float4s (640 bytes
/// apart), 24 columns read.
const VIEW: (usize, usize, usize) = (64, 40, 24);

/// Runs `pitch_update` on the emulator in `blocks` blocks over [`VIEW`], float4 i
/// starting as `init(i)` in all four floats; returns the view and the traffic.
fn pitch_update(
    init: impl Fn(usize) -> f32,
    blocks: u32,
) -> (Vec<Line>, coalesce::explain::emulate::traffic::Traffic) {
    let (rows, pitch, cols) = VIEW;
    let mut buf = vec![ZERO_LINE; rows * pitch / 8];
    for (i, v) in buf.iter_mut().flat_map(|l| l.0.iter_mut()).enumerate() {
        *v = [init(i); 4];
    }
    let dst = GlobalMut::from_ptr(buf.as_mut_ptr().cast::<Float4>());
    // SAFETY: buf holds rows x pitch float4s.
    let run = unsafe { entry::pitch_update.bind((rows.trailing_zeros(), pitch, cols, dst)) };
    let t = traffic_of(run, blocks, kernels::calibrate::pitch::BLOCK);
    (buf, t)
}

#[test]
fn the_pitch_update_stores_where_it_loaded_and_keeps_ones() {
    let (rows, pitch, cols) = VIEW;
    let (buf, t) = pitch_update(|i| if i % 2 == 0 { 1.0 } else { 3.0 }, pitch_blocks(rows * cols));
    // 2 v - 1 inside the columns read (1.0 stays 1.0, 3.0 becomes 5.0), untouched past them.
    for i in 0..rows * pitch {
        let was = if i % 2 == 0 { 1.0 } else { 3.0 };
        let want = if i % pitch < cols { 2.0 * was - 1.0 } else { was };
        assert_eq!(buf[i / 8].0[i % 8], [want; 4], "float4 {i}");
    }
    // One gather and one scatter of the same 32 sectors per warp; over the window, a
    // row's 24 columns (384 bytes) are 6 segments read and 12 sectors written.
    let warps = (rows * cols / 32) as u64;
    assert_eq!(t.global_requests, [warps, warps]);
    assert_eq!(t.global_sectors, [32 * warps, 32 * warps]);
    assert_eq!(
        (t.read_segments[1], t.write_sectors),
        (6 * rows as u64, 12 * rows as u64)
    );
    // Which explain counts as updates at their pitch, each a segment per lane.
    assert_eq!(t.scattered.len(), 1, "{:?}", t.scattered);
    assert_eq!(
        (
            t.scattered[0].kind,
            t.scattered[0].pitch_bytes,
            t.scattered[0].requests
        ),
        (coalesce::profile::RequestKind::Update, 640, warps)
    );
}

#[test]
fn the_pitch_kernels_walk_the_same_float4s_in_a_grid_stride_loop() {
    // 64 rows x 24 columns, 1536 float4s: 6 blocks walk each once, 2 blocks each three
    // times (the sweep's iterations), and the update leaves the same view.
    let (rows, pitch, cols) = VIEW;
    let run = |blocks| pitch_update(|i| i as f32, blocks);
    let (once, t1) = run(pitch_blocks(rows * cols));
    let (thrice, t3) = run(2);
    for i in 0..rows * pitch {
        let want = if i % pitch < cols {
            2.0 * i as f32 - 1.0
        } else {
            i as f32
        };
        assert_eq!(once[i / 8].0[i % 8], [want; 4], "float4 {i}");
        assert_eq!(thrice[i / 8].0[i % 8], [want; 4], "float4 {i}");
    }
    // The same requests and lanes either way: explain divides the lanes by the
    // launch's threads, 1536 / 512, for the iterations a thread runs.
    assert_eq!(t1.scattered, t3.scattered);
    assert_eq!(t3.scattered[0].lanes, (rows * cols) as u64);
}

/// A slice of `n` u32s starting on a 2 MiB page boundary (device allocations of this
/// size are), inside `buf`.
fn on_a_page(buf: &mut Vec<u32>, n: usize) -> &mut [u32] {
    let page = (2 << 20) / 4;
    buf.resize(n + page, 0);
    let skip = (page - (buf.as_ptr() as usize / 4) % page) % page;
    &mut buf[skip..skip + n]
}

#[test]
fn the_spread_kernels_place_every_chunk_and_explain_counts_the_pages_calibrate_does() {
    use coalesce::calibrate::spread::kernel_of;
    use coalesce::calibrate::spread::{misplaced, wave_spread};
    use coalesce::profile::Stream;
    use kernels::calibrate::spread::{BLOCK, CHUNK_LOG2, PER_BLOCK};
    let launch_on =
        |stream: Stream, chunks: u32, rows: u32, src: &[u32], dst: &mut [u32], blocks: Option<Vec<usize>>| {
            let n = 1usize << (chunks + CHUNK_LOG2);
            let cfg = LaunchConfig {
                grid: Dim3::from(n.div_ceil(PER_BLOCK) as u32),
                block: Dim3::from(BLOCK),
                record: blocks.is_some(),
                blocks,
                ..Default::default()
            };
            let args = (
                chunks,
                rows,
                Global::from_ptr(src.as_ptr().cast::<f32>()),
                GlobalMut::from_ptr(dst.as_mut_ptr().cast::<f32>()),
            );
            // SAFETY: src and dst hold n u32s (floats moved bit for bit).
            launch(&cfg, unsafe { kernel_of(stream).bind(args) })
        };
    for stream in [Stream::Writes, Stream::Reads] {
        let name = kernel_of(stream).name;
        // 64 chunks of 128 bytes, 8 rows (8 apart): every float where it belongs.
        let (chunks, rows) = (6, 3);
        let src: Vec<u32> = (0..1u32 << (chunks + CHUNK_LOG2)).collect();
        let mut dst = vec![u32::MAX; src.len()];
        launch_on(stream, chunks, rows, &src, &mut dst, None);
        assert_eq!(misplaced(&dst, stream, chunks, rows), None, "{name}");
        // 32 MiB, chunks 16 apart: a "wave" of 40 blocks (160 KiB) spreads over 16 x
        // 160 KiB; explain's count of its pages is calibrate's.
        let (chunks, rows) = (18, 14);
        let n = 1usize << (chunks + CHUNK_LOG2);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let src = on_a_page(&mut a, n);
        let dst = on_a_page(&mut b, n);
        let log = launch_on(stream, chunks, rows, src, dst, Some((0..40).collect()));
        let buffers = [src.as_ptr_range(), dst.as_ptr_range()].map(|r| r.start as usize..r.end as usize);
        let counted = coalesce::explain::emulate::traffic::spread_of(&log, &buffers);
        let (read, write) = wave_spread(stream, chunks, rows, 40);
        assert_eq!((counted.read, counted.write), (read, write), "{name}");
        let (near, far) = if stream == Stream::Writes {
            (read, write)
        } else {
            (write, read)
        };
        assert_eq!((near, far), (1.0, 2.0), "{name}");
    }
}
