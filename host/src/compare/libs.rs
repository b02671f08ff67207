//! Finding the CUDA toolkit's shared libraries (NVRTC, cuBLAS) at run time.
//!
//! cudarc opens them by name on the first call and panics when none of its names
//! loads. We look first, the same way (its own list of names, in its order), so a
//! missing library becomes one line for the user instead. Where a name is not on
//! the loader path we also try the toolkit's own folders (`$CUDA_HOME/lib64`,
//! `/usr/local/cuda/lib64`, ...) and, on a hit, keep that file open: the dynamic
//! loader then hands cudarc the same library when it asks for its soname.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Environment variables that name a CUDA toolkit, as cudarc's build reads them.
const TOOLKIT_VARS: [&str; 4] = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR"];
/// Where a toolkit is when no variable says.
const DEFAULT_TOOLKIT: &str = "/usr/local/cuda";

/// A toolkit library that we look for.
#[derive(Clone, Copy, Debug)]
pub struct Lib {
    /// How users know it: `NVRTC`, `cuBLAS`.
    pub label: &'static str,
    /// Its file stem as cudarc names it: `nvrtc`, `cublas`.
    pub stem: &'static str,
    /// Whether cudarc itself can open it now (its `is_culib_present`).
    pub present: fn() -> bool,
}

/// Where a library was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// On the loader path (`LD_LIBRARY_PATH`, the ld.so cache) under this name.
    LoaderPath(String),
    /// In a toolkit folder, opened by this full path.
    File(PathBuf),
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Found::LoaderPath(name) => write!(f, "{name}"),
            Found::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Why a library could not be used, as one line: which, where we looked, what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{label} not found: tried {names} on the loader path and in {dirs}{why}; install the CUDA toolkit, \
     or add the folder holding {first} to LD_LIBRARY_PATH (or set CUDA_HOME to the toolkit)"
)]
pub struct Missing {
    pub label: String,
    pub names: String,
    pub dirs: String,
    pub first: String,
    /// The loader's complaint about a file that exists but did not open, if any.
    pub why: String,
}

/// Files we opened by path; never closed, so the loader keeps them for cudarc.
static KEPT: Mutex<Vec<libloading::Library>> = Mutex::new(Vec::new());

/// The names cudarc tries for `stem`, in its order, restricted to this platform's
/// spelling (`libnvrtc.so`, `libnvrtc.so.13`, ...).
pub fn names(stem: &str) -> Vec<String> {
    let prefix = format!(
        "{}{stem}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let mut out: Vec<String> = cudarc::get_lib_name_candidates(stem)
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    out.dedup();
    out
}

/// The toolkits to look in, from the environment, then the default install.
pub fn toolkit_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    let named = TOOLKIT_VARS
        .iter()
        .filter_map(std::env::var_os)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    for root in named.chain([PathBuf::from(DEFAULT_TOOLKIT)]) {
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    roots
}

/// The toolkit folders to search for libraries, from [`toolkit_roots`].
pub fn toolkit_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in toolkit_roots() {
        for sub in ["lib64", "lib"] {
            let d = root.join(sub);
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    dirs
}

/// Finds `lib` on the loader path or in `dirs`, so that cudarc's next call loads it.
pub fn locate(lib: &Lib, dirs: &[PathBuf]) -> Result<Found, Missing> {
    let names = names(lib.stem);
    // SAFETY (for each `Library::new` below): loading a CUDA library runs its
    // initialisers, which have no preconditions on us.
    let on_path = names
        .iter()
        .find(|n| unsafe { libloading::Library::new(n.as_str()) }.is_ok());
    if let Some(name) = on_path
        && (lib.present)()
    {
        return Ok(Found::LoaderPath(name.clone()));
    }
    let mut why = String::new();
    for dir in dirs {
        for name in &names {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            match unsafe { libloading::Library::new(&path) } {
                Ok(handle) => {
                    KEPT.lock().unwrap_or_else(|e| e.into_inner()).push(handle);
                    if (lib.present)() {
                        return Ok(Found::File(path));
                    }
                    why = format!(
                        " ({} opened, but under a soname that cudarc does not ask for)",
                        path.display()
                    );
                }
                Err(e) => why = format!(" ({} exists but did not load: {e})", path.display()),
            }
        }
    }
    Err(missing(lib, &names, dirs, why))
}

fn missing(lib: &Lib, names: &[String], dirs: &[PathBuf], why: String) -> Missing {
    let shown = |d: &Path| d.display().to_string();
    Missing {
        label: lib.label.to_string(),
        names: names.join(", "),
        dirs: dirs.iter().map(|d| shown(d)).collect::<Vec<_>>().join(", "),
        first: names
            .get(1)
            .or(names.first())
            .cloned()
            .unwrap_or_else(|| lib.stem.to_string()),
        why: why.replace('\n', " "),
    }
}

/// Runs `f`, the first call into a library cudarc has just found, turning a panic
/// (a symbol missing from an old library) into an error line instead of a crash.
pub fn guarded<T>(label: &str, what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        format!(
            "{label} could not be used ({what}): {}",
            msg.lines().next().unwrap_or(msg)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOWHERE: Lib = Lib {
        label: "Nothing",
        stem: "coalesce-no-such-library",
        present: || false,
    };

    #[test]
    fn names_follow_cudarc_and_cover_cuda_12_and_13() {
        let n = names("nvrtc");
        assert_eq!(n[0], "libnvrtc.so");
        for want in ["libnvrtc.so.13", "libnvrtc.so.12"] {
            assert!(n.iter().any(|x| x == want), "{want} missing from {n:?}");
        }
        assert!(n.iter().all(|x| x.starts_with("libnvrtc.so")), "{n:?}");
    }

    #[test]
    fn a_missing_library_is_one_line_saying_where_and_what_to_do() {
        let dirs = [PathBuf::from("/nonexistent/cuda/lib64")];
        let e = locate(&NOWHERE, &dirs).unwrap_err().to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        for want in [
            "Nothing not found",
            "libcoalesce-no-such-library.so",
            "/nonexistent/cuda/lib64",
            "LD_LIBRARY_PATH",
            "CUDA_HOME",
        ] {
            assert!(e.contains(want), "{want:?} not in {e}");
        }
    }

    #[test]
    fn a_file_that_does_not_load_is_reported() {
        let dir = std::env::temp_dir().join(format!("coalesce-libs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libcoalesce-no-such-library.so"), b"not an ELF file").unwrap();
        let e = locate(&NOWHERE, std::slice::from_ref(&dir)).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.why.contains("did not load"), "{e}");
    }

    #[test]
    fn toolkit_dirs_end_with_the_default_install() {
        let d = toolkit_dirs();
        assert!(d.contains(&PathBuf::from("/usr/local/cuda/lib64")), "{d:?}");
    }

    #[test]
    fn guarded_turns_a_panic_into_a_line() {
        assert_eq!(guarded("X", "probe", || 7), Ok(7));
        let e = guarded("NVRTC", "nvrtcVersion", || -> i32 {
            panic!("Missing symbol nvrtcVersion\nmore")
        })
        .unwrap_err();
        assert_eq!(
            e,
            "NVRTC could not be used (nvrtcVersion): Missing symbol nvrtcVersion"
        );
    }
}
