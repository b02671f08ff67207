//! Where a command's files go (`--json FILE`, `calibrate --out FILE|DIR`, `report
//! --out DIR`): one rule for every output (docs/commands.md, "Output files").
//!
//! - `-` is standard output: the JSON goes there and the human text to stderr
//!   ([`Human`]), so results can be piped; a path that is this process's standard
//!   output (`/dev/stdout`) is the same;
//! - a symbolic link is followed to its target, which is what gets written (the link
//!   stays a link);
//! - a regular file is never left half-written: a temporary file in the target's own
//!   folder, then a rename onto the target (which keeps its permission bits);
//! - a device, FIFO or socket gets one line and is left as it is;
//! - the output itself may be new, the folder it goes in must exist.
//!
//! [`check_file`] and [`check_dir`] apply the rule before any work, so a bad path
//! fails before a long run (or before the GPU is opened), and a command that fails
//! early makes nothing.

use std::fs::{self, FileType, Metadata};
use std::io::{self, Write as _};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};

/// The name that means standard output.
pub const STDOUT: &str = "-";

/// What an output file path names once its links are followed.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Stdout,
    /// A regular file, or where a new one will be made.
    File(PathBuf),
}

/// The one line for an I/O error on `path`, as the user named it.
fn write_failed(path: &Path) -> impl Fn(io::Error) -> Error + Copy + '_ {
    move |source| Error::Write {
        path: path.display().to_string(),
        source,
    }
}

fn write_error(path: &Path, why: impl Into<String>) -> Error {
    write_failed(path)(io::Error::other(why.into()))
}

/// What a file that is neither a regular file nor a folder is, for the one line.
fn kind(t: FileType) -> &'static str {
    if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a folder"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Whether a path's error means nothing is there (or a file stands where a folder
/// of the path should): the rule's folder check then says which.
fn absent(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}

/// Whether `m` is the file this process's standard output writes to.
fn is_our_stdout(m: &Metadata) -> bool {
    use std::os::fd::AsFd as _;
    let Ok(fd) = io::stdout().as_fd().try_clone_to_owned() else {
        return false;
    };
    fs::File::from(fd)
        .metadata()
        .is_ok_and(|out| out.dev() == m.dev() && out.ino() == m.ino())
}

/// `path` with every symbolic link at its end followed, for a path whose target does
/// not exist yet (a dangling link names the file to make). Links in the folders above
/// are left to the system.
fn follow_links(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    // As the system does (Linux's limit): past 40 links it is a loop.
    for _ in 0..40 {
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&at).map_err(write_failed(path))?;
                at = match at.parent() {
                    Some(folder) => folder.join(to),
                    None => to,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(write_error(path, "too many levels of symbolic links"))
}

/// The folder `path` goes in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The rule's last clause: the file or folder itself may be new, the folder it goes
/// in must exist. A mistyped path is refused before a long run, not made into a tree
/// of folders nobody asked for. `shown` is the path as the user gave it.
fn check_folder_of(path: &Path, shown: &Path) -> Result<()> {
    let folder = folder_of(path);
    if folder.is_dir() {
        return Ok(());
    }
    Err(write_error(
        shown,
        if folder.exists() {
            format!("{} is not a folder", folder.display())
        } else {
            format!("the folder {} does not exist", folder.display())
        },
    ))
}

/// Where a file output goes, or the one line that says why it cannot.
fn file_target(path: &Path) -> Result<Target> {
    if path.as_os_str() == STDOUT {
        return Ok(Target::Stdout);
    }
    // `metadata` follows every link, /proc's (`/dev/stdout`) among them.
    match fs::metadata(path) {
        Ok(m) if is_our_stdout(&m) => Ok(Target::Stdout),
        Ok(m) if m.is_file() => {
            let real = fs::canonicalize(path).map_err(write_failed(path))?;
            Ok(Target::File(real))
        }
        Ok(m) if m.is_dir() => Err(write_failed(path)(io::ErrorKind::IsADirectory.into())),
        Ok(m) => Err(write_error(
            path,
            format!(
                "{}, not a regular file; it is left as it is (give - to write to standard output)",
                kind(m.file_type())
            ),
        )),
        Err(e) if absent(&e) => {
            let real = follow_links(path)?;
            check_folder_of(&real, path)?;
            Ok(Target::File(real))
        }
        Err(source) => Err(write_failed(path)(source)),
    }
}

/// Whether a file output goes to standard output (`-`, or a path to it).
pub fn is_stdout(path: &Path) -> bool {
    matches!(file_target(path), Ok(Target::Stdout))
}

/// The temporary file a write to `real` goes through: in the same folder, so the
/// rename that replaces `real` never crosses a file system.
fn temp_beside(real: &Path) -> PathBuf {
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    real.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Refuses an existing `real` this user may not write: a rename would replace even a
/// file its owner made read-only, so it is opened for writing as a plain write would
/// open it (nothing is truncated or written).
fn may_replace(real: &Path, shown: &Path) -> Result<()> {
    match fs::OpenOptions::new().write(true).open(real) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(write_failed(shown)(source)),
    }
}

/// Fails now if [`write_file`] could not write `path` later (a missing or read-only
/// folder, a folder, a device or FIFO), so a long run does not end in a lost file.
/// Leaves nothing behind.
pub fn check_file(path: &Path) -> Result<()> {
    let Target::File(real) = file_target(path)? else {
        return Ok(());
    };
    may_replace(&real, path)?;
    // Permission bits do not tell everything (root, read-only mounts): try.
    let tmp = temp_beside(&real);
    fs::File::create(&tmp).map_err(write_failed(path))?;
    let _ = fs::remove_file(&tmp);
    Ok(())
}

/// Writes `value` as JSON to `path` (see [`write_file`]).
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    write_file(path, &(text + "\n"))
}

/// Writes `text` to `path` under the module's rule: to standard output for `-`,
/// through a link to its target, and to a regular file by a temporary file and a
/// rename, so a reader never sees it half-written.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    let err = write_failed(path);
    let real = match file_target(path)? {
        Target::Stdout => {
            let mut out = io::stdout().lock();
            return out
                .write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|source| Error::Write {
                    path: "standard output".into(),
                    source,
                });
        }
        Target::File(real) => real,
    };
    may_replace(&real, path)?;
    let tmp = temp_beside(&real);
    let written = fs::write(&tmp, text).and_then(|()| {
        // A file the user had keeps its permission bits.
        match fs::metadata(&real) {
            Ok(m) => fs::set_permissions(&tmp, m.permissions()),
            Err(_) => Ok(()),
        }
    });
    written.and_then(|()| fs::rename(&tmp, &real)).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        err(e)
    })
}

/// Where a folder output goes, links followed, or the one line that says why not.
fn dir_target(dir: &Path) -> Result<PathBuf> {
    if dir.as_os_str() == STDOUT {
        return Err(Error::BadArgument(
            "--out -: a report is a folder of files, which standard output cannot hold; give --out DIR"
                .into(),
        ));
    }
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(dir.to_path_buf()),
        Ok(m) => Err(write_error(
            dir,
            format!("{}, not a folder; it is left as it is", kind(m.file_type())),
        )),
        Err(e) if absent(&e) => {
            let real = follow_links(dir)?;
            check_folder_of(&real, dir)?;
            Ok(real)
        }
        Err(source) => Err(write_failed(dir)(source)),
    }
}

/// Tries writing a file in `folder`, and removes it.
fn probe(folder: &Path, shown: &Path) -> Result<()> {
    let err = write_failed(shown);
    let probe = folder.join(format!(".coalesce-write-test.{}", std::process::id()));
    fs::write(&probe, b"").map_err(err)?;
    fs::remove_file(&probe).map_err(err)
}

/// Fails now if `dir` could not be made and written later: a writable folder (or a
/// link to one), or a new one in a writable folder that exists. Nothing is created.
pub fn check_dir(dir: &Path) -> Result<()> {
    let real = dir_target(dir)?;
    if real.is_dir() {
        probe(&real, dir)
    } else {
        probe(folder_of(&real), dir)
    }
}

/// Makes `dir` where it is new (the folder a link to it names, for a link) and checks
/// that a file can be written there.
pub fn prepare_dir(dir: &Path) -> Result<()> {
    let real = dir_target(dir)?;
    fs::create_dir_all(&real).map_err(write_failed(dir))?;
    probe(&real, dir)
}

/// Where a command's human text goes: standard output, or standard error when its
/// JSON goes to standard output (`--json -`), so the JSON can be piped alone.
#[derive(Clone, Copy, Debug)]
pub struct Human {
    to_stderr: bool,
}

impl Human {
    /// Standard output.
    pub const STDOUT: Human = Human { to_stderr: false };

    /// Standard error when `json` goes to standard output, else standard output.
    pub fn beside(json: Option<&Path>) -> Human {
        Human {
            to_stderr: json.is_some_and(is_stdout),
        }
    }

    /// Writes `text` as it is. A reader that went away (`| head`) stops nothing: the
    /// command still finishes, writes its files and sets its exit code.
    pub fn print(self, text: &str) {
        let _ = if self.to_stderr {
            io::stderr().lock().write_all(text.as_bytes())
        } else {
            io::stdout().lock().write_all(text.as_bytes())
        };
    }

    /// [`Human::print`] with a newline.
    pub fn line(self, text: &str) {
        self.print(&format!("{text}\n"));
    }
}

#[cfg(test)]
mod tests;
