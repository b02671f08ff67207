//! Tests of the generated kernel table (`HOST_KERNELS`) and of its scanner
//! (`kernel_table.rs`, shared with the build scripts).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::string::String;
use std::vec::Vec;

use crate::gpu::emu::{self, Dim3, LaunchConfig, LaunchError};
use crate::{HOST_KERNELS, host_kernel};

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
fn table_names_are_unique_and_arities_match_the_source() {
    for (i, k) in HOST_KERNELS.iter().enumerate() {
        assert!(
            HOST_KERNELS[..i].iter().all(|o| o.name != k.name),
            "{} is in the table twice",
            k.name
        );
        assert_eq!(k.arity(), k.params.len());
    }
    for (name, arity) in [
        ("copy_f32", 3),
        ("stride_read", 4),
        ("matmul_remapped", 6),
        ("particles_soa", 8),
    ] {
        let k = host_kernel(name).unwrap_or_else(|| panic!("{name} is not in the table"));
        assert_eq!(k.arity(), arity, "{name}: {:?}", k.params);
    }
    assert_eq!(
        host_kernel("copy_f32").unwrap().params,
        ["usize", "Global<f32>", "GlobalMut<f32>"]
    );
    assert_eq!(
        host_kernel("particles_aos").unwrap().params,
        ["usize", "f32", "GlobalMut<Particle>"]
    );
    assert!(host_kernel("no_such_kernel").is_none());
}

#[test]
fn copy_f32_runs_through_the_table() {
    let n = 1000;
    let src: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let mut dst = std::vec![f32::NAN; n];
    let words = [n as u64, addr(src.as_ptr()), addr(dst.as_mut_ptr())];
    let k = host_kernel("copy_f32").unwrap();
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
    let k = host_kernel("saxpy_f32").unwrap();
    // SAFETY: x and y hold n floats and outlive the launch.
    emu::launch(&config_1d(n, 64), || unsafe { (k.call)(&words) });
    for (i, ((&got, &x), &y0)) in y.iter().zip(&x).zip(&y0).enumerate() {
        assert_eq!(got.to_bits(), a.mul_add(x, y0).to_bits(), "element {i}");
    }
}

#[test]
fn a_wrong_word_count_panics_naming_the_kernel() {
    let k = host_kernel("stride_read").unwrap();
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

/// The scanner itself, on sources shaped like the ones it must survive.
#[allow(dead_code)] // generate_host_kernels is the build scripts' entry point, not used here.
mod scanner {
    use std::string::{String, ToString};
    use std::vec::Vec;
    use std::{format, vec};

    include!("../kernel_table.rs");

    fn scan(source: &str) -> Vec<(String, Vec<String>)> {
        scan_kernels("test.rs", source, "crate::m")
            .into_iter()
            .map(|k| (k.path, k.params))
            .collect()
    }

    fn scan_error(source: &str) -> String {
        let source = source.to_string();
        let payload = std::panic::catch_unwind(move || scan(&source)).unwrap_err();
        super::panic_text(payload.as_ref())
    }

    #[test]
    fn finds_kernels_through_comments_attributes_and_odd_layout() {
        let source = r#"
            //! kernel! { pub fn in_a_doc_comment(x: u32) {} }
            use crate::gpu::{Global, GlobalMut};
            /* kernel! { pub fn in_a_block_comment(x: u32) {} } /* nested */ */
            const S: &str = "kernel! { pub fn in_a_string(x: u32) {} }";
            const C: char = '{';
            fn helper<'a>(x: &'a u32) -> &'a u32 { x }
            macro_rules! kernel { () => {} }

            kernel! {
                /// Docs with `kernel!` and a brace { in them.
                #[allow(clippy::too_many_arguments)]
                // A plain comment, with (parentheses.
                pub fn first(
                    n: usize, // the count
                    f: Option<fn(u32) -> u32>,
                    pair: Wrapper<A, B>,
                    p: Global<
                        f32
                    >,
                ) {
                    let s = "}";
                    if n > 0 { body(); }
                }
            }

            kernel!{pub fn second(){}}
            kernels::kernel! { pub fn third(q: GlobalMut<f32>) {} }
        "#;
        assert_eq!(
            scan(source),
            vec![
                (
                    "crate::m::first".to_string(),
                    vec![
                        "usize".to_string(),
                        "Option<fn(u32) -> u32>".to_string(),
                        "Wrapper<A, B>".to_string(),
                        "Global<f32>".to_string(),
                    ]
                ),
                ("crate::m::second".to_string(), vec![]),
                ("crate::m::third".to_string(), vec!["GlobalMut<f32>".to_string()]),
            ]
        );
    }

    #[test]
    fn an_unparseable_block_fails_with_its_file_and_line() {
        let message = scan_error("\nkernel! {\n    pub fn generic<T>(x: T) {}\n}\n");
        assert!(message.starts_with("test.rs:3: cannot parse"), "{message}");
        assert!(message.contains("`(` after the kernel's name"), "{message}");

        let message = scan_error("kernel! {\n    fn private(x: u32) {}\n}");
        assert!(message.contains("expected `pub fn`"), "{message}");

        let message = scan_error("kernel! { pub fn two(x: u32) {} pub fn more() {} }");
        assert!(message.contains("one `pub fn` per block"), "{message}");

        let message = scan_error("kernel! { pub fn bad(x) {} }");
        assert!(message.contains("`name: Type`"), "{message}");

        let message = scan_error("mod inner { kernel! { pub fn hidden(x: u32) {} } }");
        assert!(message.contains("top level"), "{message}");

        let message = scan_error("kernel! { pub fn open(x: u32) {");
        assert!(message.contains("closing bracket"), "{message}");
    }

    #[test]
    fn the_rendered_table_checks_the_word_count_before_converting() {
        let kernels = scan_kernels("test.rs", "kernel! { pub fn k(a: u32, b: f32) {} }", "crate::m");
        let table = render_table(&kernels, "crate::gpu::emu");
        let check = table.find("assert!(w.len() == 2, \"kernel k takes 2").unwrap();
        let call = table
            .find("unsafe { crate::m::k(crate::gpu::emu::FromWord::from_word(w[0]), ")
            .unwrap();
        assert!(check < call, "{table}");
        assert!(table.contains("params: &[\"u32\", \"f32\"],"), "{table}");
    }

    #[test]
    fn reads_launch_bounds_and_refuses_malformed_ones() {
        let kernels = scan_kernels(
            "test.rs",
            "kernel! {\n    #[launch_bounds(256, 2)]\n    /// doc\n    pub fn bounded(x: u32) {}\n}\n\
             kernel! { pub fn free(x: u32) {} }",
            "crate::m",
        );
        let bounds: Vec<_> = kernels
            .iter()
            .map(|k| (k.name.as_str(), k.launch_bounds))
            .collect();
        assert_eq!(bounds, [("bounded", Some((256, 2))), ("free", None)]);
        for bad in [
            "#[launch_bounds(256)]",
            "#[launch_bounds(0, 2)]",
            "#[launch_bounds(x, 2)]",
            "#[launch_bounds]",
        ] {
            let message = scan_error(&format!("kernel! {{ {bad} pub fn k(x: u32) {{}} }}"));
            assert!(
                message.contains("launch_bounds(THREADS, BLOCKS)"),
                "{bad}: {message}"
            );
        }
    }
}
