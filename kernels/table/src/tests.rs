//! The table reader on sources shaped like the ones it must survive, and the code it
//! generates.

use super::*;

fn scan(source: &str) -> Vec<(String, Vec<String>)> {
    scan_source("test.rs", source, "crate::m")
        .unwrap()
        .into_iter()
        .map(|k| (k.path(), k.params))
        .collect()
}

fn scan_error(source: &str) -> String {
    scan_source("test.rs", source, "crate::m")
        .unwrap_err()
        .to_string()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn finds_kernels_through_comments_strings_modules_and_odd_layout() {
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
        pub mod inner {
            kernel! { pub fn fourth(x: u32) {} }
        }
    "#;
    assert_eq!(
        scan(source),
        vec![
            ("crate::m::first".to_string(), strings(&["n", "f", "pair", "p"])),
            ("crate::m::second".to_string(), vec![]),
            ("crate::m::third".to_string(), strings(&["q"])),
            ("crate::m::inner::fourth".to_string(), strings(&["x"])),
        ]
    );
    let first = &scan_source("test.rs", source, "crate::m").unwrap()[0];
    assert_eq!(first.doc, [" Docs with `kernel!` and a brace { in them."]);
    assert_eq!((first.file.as_str(), first.line), ("test.rs", 10));
}

#[test]
fn an_unparseable_block_fails_with_its_file_and_line() {
    let message = scan_error("\nkernel! {\n    pub fn generic<T>(x: T) {}\n}\n");
    assert!(
        message.starts_with("test.rs:3: in this `kernel!` block"),
        "{message}"
    );
    assert!(message.contains("no generics"), "{message}");

    let message = scan_error("kernel! {\n    fn private(x: u32) {}\n}");
    assert!(
        message.starts_with("test.rs:2:") && message.contains("expected `pub fn`"),
        "{message}"
    );

    let message = scan_error("kernel! { pub fn two(x: u32) {} pub fn more() {} }");
    assert!(message.contains("one `pub fn` per `kernel!` block"), "{message}");

    let message = scan_error("kernel! { pub fn bad(x) {} }");
    assert!(
        message.contains("expected `pub fn NAME(PARAMS) { BODY }`"),
        "{message}"
    );

    let message = scan_error("kernel! { pub fn ret(x: u32) -> u32 { x } }");
    assert!(message.contains("returns nothing"), "{message}");

    let message = scan_error("kernel! { pub fn pattern((a, b): (u32, u32)) {} }");
    assert!(message.contains("a plain identifier"), "{message}");

    let message = scan_error("fn f() {\n    kernel! { pub fn hidden(x: u32) {} }\n}");
    assert!(
        message.starts_with("test.rs:2:") && message.contains("item of a module"),
        "{message}"
    );

    let message = scan_error("kernel! { pub fn open(x: u32) {");
    assert!(
        message.starts_with("test.rs:1: cannot parse this file"),
        "{message}"
    );
}

#[test]
fn reads_launch_bounds_and_requirements_in_the_macros_order() {
    let kernels = scan_source(
        "test.rs",
        "kernel! {\n    #[launch_bounds(256, 2)]\n    #[requires(sm_80)]\n    /// doc\n    pub fn bounded(x: u32) {}\n}\n\
         kernel! { pub fn free(x: u32) {} }\n\
         kernel! { #[requires(sm_90a)] pub fn hopper(x: u32) {} }",
        "crate::m",
    )
    .unwrap();
    let read: Vec<_> = kernels
        .iter()
        .map(|k| (k.name.as_str(), k.launch_bounds, k.ptx_module()))
        .collect();
    let bounds = LaunchBounds {
        threads: 256,
        blocks: 2,
    };
    assert_eq!(
        read,
        [
            ("bounded", Some(bounds), "Sm80".to_string()),
            ("free", None, "Baseline".to_string()),
            ("hopper", None, "Sm90a".to_string()),
        ]
    );
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
    let message = scan_error("kernel! { /// doc\n #[launch_bounds(256, 2)] pub fn k(x: u32) {} }");
    assert!(message.contains("`#[launch_bounds]` first"), "{message}");
    let message = scan_error("kernel! { #[requires(sm_80)] #[launch_bounds(256, 2)] pub fn k(x: u32) {} }");
    assert!(message.contains("`#[launch_bounds]` first"), "{message}");
    let message = scan_error("kernel! { /// doc\n #[requires(sm_80)] pub fn k(x: u32) {} }");
    assert!(message.contains("`#[requires(..)]` first"), "{message}");
    let message = scan_error("kernel! { #[requires(hopper)] pub fn k(x: u32) {} }");
    assert!(message.contains("`#[requires(sm_XX)]`"), "{message}");
}

#[test]
fn module_paths_follow_the_file_tree_and_names_are_unique() {
    let dir = std::env::temp_dir().join(format!("coalesce-kernel-table-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "pub mod a; pub mod b;\nkernel! { pub fn at_root(x: u32) {} }",
    );
    write("a.rs", "kernel! { pub fn in_a(x: u32) {} }");
    write("b/mod.rs", "pub mod c;\nkernel! { pub fn in_b(x: u32) {} }");
    write("b/c.rs", "kernel! { pub fn in_c(x: u32) {} }");
    let paths: Vec<String> = scan_crate(&dir).unwrap().iter().map(Kernel::path).collect();
    assert_eq!(
        paths,
        [
            "crate::a::in_a",
            "crate::b::c::in_c",
            "crate::b::in_b",
            "crate::at_root"
        ]
    );

    write("b/c.rs", "\n\nkernel! { pub fn in_a(x: u32) {} }");
    let e = scan_crate(&dir).unwrap_err();
    assert_eq!((e.file.ends_with("c.rs"), e.line), (true, 3), "{e}");
    assert!(
        e.message.contains("`in_a` is already declared at") && e.message.contains("a.rs:1"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_generated_handle_checks_the_word_count_before_converting() {
    let kernels = scan_source(
        "src/m.rs",
        "kernel! { #[launch_bounds(128, 4)] #[requires(sm_80)] pub fn k(a: u32, b: f32) {} }",
        "crate::m",
    )
    .unwrap();
    let code = render_handles(&kernels, "crate");
    assert!(
        code.contains("pub static k: crate::handle::Kernel<crate::m::k> = "),
        "{code}"
    );
    assert!(
        code.contains("params: <crate::m::k as crate::gpu::param::KernelArgs>::KINDS,"),
        "{code}"
    );
    assert!(code.contains("module: crate::handle::PtxModule::Sm80,"), "{code}");
    assert!(code.contains("threads: 128, blocks: 4"), "{code}");
    let check = code.find("assert!(w.len() == 2, \"kernel k takes 2").unwrap();
    let call = code
        .find("unsafe { crate::m::k(crate::gpu::param::KernelParam::from_word(w[0]), ")
        .unwrap();
    assert!(check < call, "{code}");
    assert!(
        code.contains("pub static ALL: &[&crate::handle::KernelInfo] = &[\n    k.info(),\n];"),
        "{code}"
    );
}
