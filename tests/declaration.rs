//! One declaration is all an experiment needs: a test-only experiment, declared
//! here and nowhere else, is selected, emulated and validated, explained, compiled
//! as a C++ twin and (on a GPU) checked, measured and compared by the same code
//! paths the commands use, with no line of the product written for it.

mod common;

use coalesce::device::DeviceInfo;
use coalesce::experiment::{
    Arg, Buffer, Check, DefaultSize, Dim, Experiment, Kind, Problem, Reference, Twin, Variant, Work,
};
use coalesce::experiments::{Selection, select_from};
use coalesce::explain::emulate::analyse::Direction;
use coalesce::explain::emulate::model::Model;
use coalesce::explain::emulate::{self, EmuLaunch};
use coalesce::launch::Launch;
use kernels::entry;

const ARGS: &[Arg] = &[Arg::Dim(Dim::Len), Arg::Param, Arg::Buffer(0), Arg::Buffer(1)];

/// out[i] = in[i * s], reusing the product's `stride_read` kernel with a stride the
/// product never runs (3), and a twin defined right here.
static DEMO: Experiment = Experiment {
    name: "demo",
    about: "a test-only experiment: declared once, picked up by every backend",
    kind: Kind::Elements,
    default_size: DefaultSize::Bytes(4 << 20),
    variants: &[
        Variant::new("1", &entry::stride_read, ARGS, |p, _| {
            Launch::one_per_element(p.dim(Dim::Len), 128)
        })
        .with_param(1),
        Variant::new("3", &entry::stride_read, ARGS, |p, _| {
            Launch::one_per_element(p.dim(Dim::Len), 128)
        })
        .with_param(3),
    ],
    buffers: |p| {
        let n = p.dim(Dim::Len);
        Some(vec![
            Buffer::input("src", n.checked_mul(3)?),
            Buffer::output("dst", n),
        ])
    },
    work: |p| Work::Bytes(8 * p.dim(Dim::Len) as u64),
    reference: Reference::Elementwise {
        check: Check::Exact,
        expected: |_, s, input, _, i| input.get(0, i * s),
    },
    twin: Twin {
        file: "demo.cu",
        source: "extern \"C\" __global__ void stride_read(size_t n, size_t s, const float* src, float* dst) {\n\
                 \x20   size_t i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                 \x20   if (i < n) dst[i] = __ldg(&src[i * s]);\n\
                 }\n",
    },
};

fn demo() -> Vec<Selection> {
    select_from(&[&DEMO], &[]).unwrap()
}

#[test]
fn it_is_selected_by_name_and_variant() {
    let s = select_from(&[&DEMO], &["demo/3".to_string()]).unwrap();
    assert!(s[0].includes("3") && !s[0].includes("1"));
    let e = select_from(&[&DEMO], &["demo/2".to_string()]).unwrap_err();
    assert!(e.to_string().contains("its variants: 1, 3"), "{e}");
}

#[test]
fn the_emulator_validates_it_at_every_awkward_size() {
    let info = DeviceInfo::h100();
    let mut runs = 0;
    for problem in DEMO.kind.awkward().into_iter().filter(Problem::emulated) {
        for v in DEMO.variants {
            let run = EmuLaunch::new(&DEMO, v, problem, &info).unwrap();
            let check = emulate::validate(&run, 11).unwrap();
            assert!(check.ok, "demo/{} at {problem}: {}", v.name, check.detail);
            runs += 1;
        }
    }
    assert_eq!(runs, 12);
}

#[test]
fn explain_predicts_its_coalescing() {
    let opts = coalesce::explain::Options {
        size: None,
        shape: None,
        model: Model::Sm70,
        blocks: 4,
        profile: None,
        memory_limit: coalesce::explain::EMULATION_BYTES,
    };
    let report = coalesce::explain::explain(&demo(), &opts, |_| {}).unwrap();
    let loads: Vec<f64> = report
        .kernels
        .iter()
        .map(|k| k.sectors_per_request(Direction::Load).unwrap())
        .collect();
    // Stride 1: a warp's 128 bytes are 4 sectors; stride 3: 384 bytes, 12 sectors.
    assert_eq!(loads, [4.0, 12.0]);
}

#[test]
fn its_twin_compiles_where_nvrtc_is_installed() {
    let Some(nvrtc) = common::nvrtc() else {
        return;
    };
    let ptx =
        coalesce::compare::twins::compile(&nvrtc, &DEMO, "compute_80").unwrap_or_else(|u| panic!("{u}"));
    assert!(ptx.contains(".entry stride_read"));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn check_run_and_compare_run_it_on_the_gpu() {
    use coalesce::harness::{RunOptions, run_experiment};
    use coalesce::timing::Reps;
    let gpu = common::gpu();
    let rows = coalesce::check::run_checks(&gpu, &demo(), 3).unwrap();
    assert_eq!(rows.len(), 2 * DEMO.kind.awkward().len());
    assert!(
        rows.iter().all(|r| r.validated),
        "{}",
        coalesce::check::render(&rows)
    );
    let opts = RunOptions {
        size: Some(64 << 20),
        shape: None,
        reps: Reps { warmup: 1, timed: 3 },
        seed: 5,
    };
    let measured = run_experiment(&gpu, &demo()[0], &opts, None, &[], |_| Ok(()), |_| {}).unwrap();
    assert_eq!(measured.rows.len(), 2);
    assert!(
        measured
            .rows
            .iter()
            .all(|(r, _, _)| r.validated && r.gb_per_s > 0.0)
    );
    // Library calls beside each variant run in the same rounds as it, each timed.
    let calls = std::cell::Cell::new(0);
    let count = |_: &coalesce::prepared::Prepared, _: usize| {
        calls.set(calls.get() + 1);
        Ok(())
    };
    let two: [coalesce::harness::Beside; 2] = [&count, &count];
    let beside = run_experiment(&gpu, &demo()[0], &opts, None, &two, |_| Ok(()), |_| {}).unwrap();
    assert!(
        beside
            .rows
            .iter()
            .all(|(_, _, t)| t.len() == 2 && t.iter().all(|t| t.reps == 3))
    );
    assert_eq!(calls.get(), 2 * 2 * (1 + 3));
    let compared = coalesce::compare::run::compare(&gpu, &demo(), &opts, None, |_| {}).unwrap();
    assert!(compared.cpp_available, "{}", compared.cpp);
    assert!(
        compared
            .rows
            .iter()
            .all(|r| r.rust.validated && r.cpp.as_ref().is_some_and(|c| c.validated))
    );
}
