//! Tests of the generated kernel handles (`entry`, `HOST_KERNELS`); the table reader
//! itself is tested in kernels/table.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::string::String;
use std::vec::Vec;

use crate::gpu::emu::{self, Dim3, LaunchConfig, LaunchError};
use crate::gpu::param::{KernelArgs, ParamKind};
use crate::gpu::{Global, GlobalMut};
use crate::handle::{LaunchBounds, PtxModule};
use crate::{HOST_KERNELS, entry};

/// The word a host passes for a buffer: its address.
fn addr<T>(p: *const T) -> u64 {
    p.expose_provenance() as u64
}

fn config_1d(n: usize, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::from(n.div_ceil(block as usize) as u32),
        block: Dim3::from(block),
        ..LaunchConfig::default()
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| String::from(*s)))
        .unwrap_or_default()
}

#[test]
fn handles_are_unique_and_carry_their_parameters_module_and_bounds() {
    for (i, k) in HOST_KERNELS.iter().enumerate() {
        assert!(
            HOST_KERNELS[..i].iter().all(|o| o.name != k.name),
            "{} is in the table twice",
            k.name
        );
    }
    for (k, arity) in [
        (entry::copy_f32.info(), 3),
        (entry::stride_read.info(), 4),
        (entry::matmul_remapped.info(), 6),
        (entry::particles_soa.info(), 8),
    ] {
        assert_eq!(k.arity(), arity, "{}: {:?}", k.name, k.params);
        assert!(HOST_KERNELS.contains(&k), "{} is not in HOST_KERNELS", k.name);
    }
    use ParamKind as K;
    assert_eq!(entry::copy_f32.params, [K::Usize, K::Global, K::GlobalMut]);
    assert_eq!(entry::particles_aos.params, [K::Usize, K::F32, K::GlobalMut]);
    assert_eq!(entry::fill_uniform.params, [K::Usize, K::U64, K::GlobalMut]);
    assert_eq!(entry::matmul_naive.params[..3], [K::U32, K::U32, K::U32]);
    // The handle's type is the kernel's parameter tuple.
    let _: &crate::handle::Kernel<(usize, Global<f32>, GlobalMut<f32>)> = &entry::copy_f32;
    assert_eq!(
        <(usize, f32, GlobalMut<f32>) as KernelArgs>::KINDS,
        [K::Usize, K::F32, K::GlobalMut]
    );

    assert_eq!(entry::copy_f32.module, PtxModule::Baseline);
    assert_eq!(entry::sgemm_async_128x128x8.module, PtxModule::Sm80);
    assert_eq!(entry::sgemm_tf32_128x256x32.module, PtxModule::Sm80);
    assert_eq!(
        entry::sgemm_interior.launch_bounds,
        Some(LaunchBounds {
            threads: 256,
            blocks: 2
        })
    );
    assert_eq!(entry::copy_f32.launch_bounds, None);
}

#[test]
fn copy_f32_runs_through_the_table() {
    let n = 1000;
    let src: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let mut dst = std::vec![f32::NAN; n];
    let words = [n as u64, addr(src.as_ptr()), addr(dst.as_mut_ptr())];
    let k = &entry::copy_f32;
    // SAFETY: both buffers hold n floats and outlive the launch.
    emu::launch(&config_1d(n, 128), || unsafe { (k.call)(&words) });
    assert_eq!(dst, src);
}

#[test]
fn saxpy_f32_runs_through_the_table() {
    let (n, a) = (777, 1.5f32);
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y0: Vec<f32> = (0..n).map(|i| 3.0 - i as f32 * 0.25).collect();
    let mut y = y0.clone();
    // f32 parameters travel as their bits in the word's low half.
    let words = [
        n as u64,
        u64::from(a.to_bits()),
        addr(x.as_ptr()),
        addr(y.as_mut_ptr()),
    ];
    let k = &entry::saxpy_f32;
    // SAFETY: x and y hold n floats and outlive the launch.
    emu::launch(&config_1d(n, 64), || unsafe { (k.call)(&words) });
    for (i, ((&got, &x), &y0)) in y.iter().zip(&x).zip(&y0).enumerate() {
        assert_eq!(got.to_bits(), a.mul_add(x, y0).to_bits(), "element {i}");
    }
}

#[test]
fn a_wrong_word_count_panics_naming_the_kernel() {
    let k = &entry::stride_read;
    // SAFETY: the count is checked before any word is used.
    let payload = catch_unwind(AssertUnwindSafe(|| unsafe { (k.call)(&[1, 2]) })).unwrap_err();
    let message = panic_text(payload.as_ref());
    assert!(
        message.contains("stride_read") && message.contains("4") && message.contains("got 2"),
        "{message}"
    );

    // Inside a launch the same panic fails the launch with that message.
    // SAFETY: as above.
    let err = emu::try_launch(&config_1d(1, 1), || unsafe { (k.call)(&[]) }).unwrap_err();
    let LaunchError::Panicked { message, .. } = err else {
        panic!("expected a panicked launch, got {err}");
    };
    assert!(message.contains("stride_read"), "{message}");
}

/// Runs the hold kernel on the emulator in a thread of its own with `flag` and
/// `limit_ns`; the wall time it took, or None if it had not returned within 10 s.
fn hold_on_emulator(
    flag: &'static std::sync::atomic::AtomicU32,
    limit_ns: u64,
) -> Option<std::time::Duration> {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let words = [addr(flag.as_ptr()), limit_ns];
        let k = &entry::hold;
        // SAFETY: the flag is a static word the kernel only reads.
        emu::launch(&config_1d(1, 1), || unsafe { (k.call)(&words) });
        let _ = done.send(start.elapsed());
    });
    finished.recv_timeout(std::time::Duration::from_secs(10)).ok()
}

#[test]
fn the_hold_returns_when_the_host_sets_its_flag_and_not_before() {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;
    static SET: AtomicU32 = AtomicU32::new(1);
    let at_once = hold_on_emulator(&SET, 60_000_000_000).expect("a set flag returns");
    assert!(at_once < Duration::from_secs(5), "{at_once:?}");
    static LATER: AtomicU32 = AtomicU32::new(0);
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(50));
        LATER.store(1, Ordering::Relaxed);
    });
    let held = hold_on_emulator(&LATER, 60_000_000_000).expect("the flag, once set, ends the hold");
    assert!(
        held >= Duration::from_millis(50),
        "returned after {held:?}, before the flag was set"
    );
}

#[test]
fn the_hold_gives_up_after_its_limit() {
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;
    static NEVER: AtomicU32 = AtomicU32::new(0);
    let held = hold_on_emulator(&NEVER, 30_000_000).expect("the limit ends the hold");
    assert!(held >= Duration::from_millis(30), "{held:?}");
}
