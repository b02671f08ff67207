use super::*;

use std::os::unix::fs::{PermissionsExt as _, symlink};

/// A fresh, empty folder for one test (tests run in parallel).
fn folder(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("coalesce-output-{test}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
}

#[test]
fn a_regular_file_is_replaced_whole_and_keeps_its_permissions() {
    let dir = folder("regular");
    let path = dir.join("r.json");
    fs::write(&path, "old").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    write_file(&path, "new\n").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
    assert_eq!(names(&dir), ["r.json"], "no temporary file left behind");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_link_is_written_through_to_its_target_and_stays_a_link() {
    let dir = folder("link");
    fs::create_dir(dir.join("real")).unwrap();
    let target = dir.join("real/r.json");
    fs::write(&target, "old").unwrap();
    // A relative link, read from the link's own folder; and a link to that link.
    let link = dir.join("link.json");
    symlink("real/r.json", &link).unwrap();
    let twice = dir.join("twice.json");
    symlink(&link, &twice).unwrap();
    check_file(&twice).unwrap();
    write_file(&twice, "new").unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    for l in [&link, &twice] {
        assert!(fs::symlink_metadata(l).unwrap().file_type().is_symlink());
    }
    assert_eq!(names(&dir.join("real")), ["r.json"]);
    // A link to a file not there yet makes that file.
    let dangling = dir.join("new.json");
    symlink("real/made.json", &dangling).unwrap();
    check_file(&dangling).unwrap();
    assert!(!dir.join("real/made.json").exists(), "the check makes nothing");
    write_json(&dangling, &[1, 2]).unwrap();
    assert!(fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
    assert!(
        fs::read_to_string(dir.join("real/made.json"))
            .unwrap()
            .contains('2')
    );
    // ... in a folder that must exist.
    let nowhere = dir.join("nowhere.json");
    symlink("no-such-folder/x.json", &nowhere).unwrap();
    let e = check_file(&nowhere).unwrap_err().to_string();
    assert!(e.ends_with("does not exist"), "{e}");
    assert_eq!(names(&dir.join("real")), ["made.json", "r.json"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn devices_fifos_and_sockets_are_refused_and_left_as_they_are() {
    let dir = folder("special");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let socket = dir.join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let link = dir.join("to-fifo.json");
    symlink(&fifo, &link).unwrap();
    for (path, kind) in [
        (Path::new("/dev/null"), "a character device"),
        (Path::new("/dev/full"), "a character device"),
        (&fifo, "a FIFO"),
        (&link, "a FIFO"),
        (&socket, "a socket"),
    ] {
        for e in [check_file(path), write_file(path, "x")] {
            let e = e.unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "cannot write {}: {kind}, not a regular file; it is left as it is (give - to write to standard output)",
                    path.display()
                )
            );
            assert_eq!(e.exit_code(), 1);
        }
    }
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    assert_eq!(names(&dir), ["fifo", "socket", "to-fifo.json"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_dash_is_standard_output() {
    assert!(is_stdout(Path::new("-")));
    assert_eq!(file_target(Path::new("-")).unwrap(), Target::Stdout);
    assert!(!is_stdout(Path::new("r.json")));
    check_file(Path::new("-")).unwrap();
}

#[test]
fn writability_is_checked_up_front_and_leaves_nothing_behind() {
    let e = check_file(Path::new("/nonexistent-dir/r.json")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot write /nonexistent-dir/r.json: the folder /nonexistent-dir does not exist"
    );
    let e = check_file(Path::new("/proc/version/r.json")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot write /proc/version/r.json: /proc/version is not a folder"
    );
    let e = write_json(Path::new("/nonexistent-dir/r.json"), &1).unwrap_err();
    assert!(
        e.to_string().starts_with("cannot write /nonexistent-dir/r.json"),
        "{e}"
    );
    let dir = folder("writable");
    let e = check_file(&dir).unwrap_err();
    assert!(e.to_string().ends_with(": is a directory"), "{e}");
    check_file(&dir.join("r.json")).unwrap();
    assert!(names(&dir).is_empty(), "the probe file is removed");
    // A loop of links is one line too.
    let (a, b) = (dir.join("a"), dir.join("b"));
    symlink(&b, &a).unwrap();
    symlink(&a, &b).unwrap();
    let e = check_file(&a).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("cannot write {}: ", a.display())),
        "{e}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn folders_follow_the_same_rule() {
    let dir = folder("dirs");
    let real = dir.join("real");
    fs::create_dir(&real).unwrap();
    let link = dir.join("link");
    symlink("real", &link).unwrap();
    check_dir(&link).unwrap();
    prepare_dir(&link).unwrap();
    write_file(&link.join("report.md"), "x").unwrap();
    assert_eq!(names(&real), ["report.md"]);
    // A link to a folder not made yet: the folder is made where it points.
    let later = dir.join("later");
    symlink("made", &later).unwrap();
    check_dir(&later).unwrap();
    assert!(!dir.join("made").exists(), "the check makes nothing");
    prepare_dir(&later).unwrap();
    assert!(dir.join("made").is_dir() && fs::symlink_metadata(&later).unwrap().file_type().is_symlink());
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    for (path, kind) in [(Path::new("/dev/null"), "a character device"), (&fifo, "a FIFO")] {
        for e in [check_dir(path), prepare_dir(path)] {
            assert_eq!(
                e.unwrap_err().to_string(),
                format!(
                    "cannot write {}: {kind}, not a folder; it is left as it is",
                    path.display()
                )
            );
        }
    }
    let e = check_dir(Path::new("-")).unwrap_err();
    assert!(e.to_string().contains("standard output cannot hold"), "{e}");
    assert_eq!(e.exit_code(), 2);
    let e = check_dir(&dir.join("no/such")).unwrap_err();
    assert!(e.to_string().ends_with("/no does not exist"), "{e}");
    assert_eq!(names(&dir), ["fifo", "later", "link", "made", "real"]);
    fs::remove_dir_all(&dir).unwrap();
}
