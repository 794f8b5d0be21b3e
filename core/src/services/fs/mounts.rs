//! Other names of a file reached through a mount point inside a root (Linux).
//!
//! A bind mount makes a directory (or a file) reachable under a second name: with `ws/g` a bind
//! mount of `ws/.git`, `ws/g/config` *is* `ws/.git/config`, and a `.env` bind-mounted at
//! `ws/notenv` is read through a name no rule mentions. The walk's handles tell which mount each
//! directory is on (`statx`'s mount id); when the file's mount differs from its root's, the
//! mount's source path (`/proc/self/mountinfo`'s root field) followed by the rest of the path is
//! another name of the file. Restrictive rules are decided on those names too.
//!
//! The source path is where the mounted tree lives inside its file system, which is not always a
//! path of this mount namespace (a container volume's source is a host path). So the names are:
//! that source path as written, and its translation through every other mount of the same
//! device whose root contains it (`ws/.git/config` for the bind mount above). A mount that
//! mountinfo does not list (it changed meanwhile, or /proc is not mounted) fails closed.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, StatxFlags, statx};

/// Names beyond this many are not built (a tree of bind mounts of one device).
const MAX_NAMES: usize = 8;

/// The mount a handle is on (`statx`'s `stx_mnt_id`, mountinfo's first field).
pub(super) fn mount_of(fd: impl AsFd) -> std::io::Result<u64> {
    Ok(statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID)?.stx_mnt_id)
}

/// One line of /proc/self/mountinfo.
#[derive(Debug)]
struct Mount {
    id: u64,
    device: String,
    root: PathBuf,
    point: PathBuf,
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && let Some(v) = std::str::from_utf8(&bytes[i + 1..i + 4])
                .ok()
                .and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(OsString::from_vec(out))
}

fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split(' ');
            let id = f.next()?.parse().ok()?;
            let _parent = f.next()?;
            let device = f.next()?.to_owned();
            let root = unescape(f.next()?);
            let point = unescape(f.next()?);
            Some(Mount {
                id,
                device,
                root,
                point,
            })
        })
        .collect()
}

/// The other names of `rest` (components below the mount point) on mount `id`.
pub(super) fn other_names(id: u64, rest: &[OsString]) -> std::io::Result<Vec<String>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")?;
    names_in(&parse(&text), id, rest).ok_or_else(|| {
        std::io::Error::other(format!(
            "mount {id} inside the root is not in /proc/self/mountinfo"
        ))
    })
}

fn names_in(mounts: &[Mount], id: u64, rest: &[OsString]) -> Option<Vec<String>> {
    let mount = mounts.iter().find(|m| m.id == id)?;
    let below = |base: &Path| {
        let mut p = base.to_path_buf();
        p.extend(rest);
        p.to_string_lossy().into_owned()
    };
    let mut names = vec![below(&mount.root)];
    for other in mounts {
        if names.len() >= MAX_NAMES {
            break;
        }
        if other.id == id || other.device != mount.device {
            continue;
        }
        if let Ok(inside) = mount.root.strip_prefix(&other.root) {
            let name = below(&other.point.join(inside));
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
66 22 254:0 /home/u/ws/.git /home/u/ws/g rw,relatime - ext4 /dev/vda rw
67 22 254:0 /home/u/ws/.env /home/u/ws/not\\040env rw - ext4 /dev/vda rw
80 22 0:50 /volumes/v/_data /work rw - ext4 /dev/vdb rw
81 80 0:50 /volumes/v/_data/.git /work/src/g rw - ext4 /dev/vdb rw
";

    fn os(names: &[&str]) -> Vec<OsString> {
        names.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_bind_mount_of_dot_git_is_named_by_its_source() {
        let mounts = parse(INFO);
        let names = names_in(&mounts, 66, &os(&["hooks", "pre-commit"])).unwrap();
        assert_eq!(names, vec!["/home/u/ws/.git/hooks/pre-commit"]);
    }

    #[test]
    fn a_volume_source_is_translated_into_this_namespace() {
        let mounts = parse(INFO);
        let names = names_in(&mounts, 81, &os(&["config"])).unwrap();
        assert_eq!(
            names,
            vec!["/volumes/v/_data/.git/config", "/work/.git/config"]
        );
    }

    #[test]
    fn escaped_mount_points_and_unknown_mounts() {
        let mounts = parse(INFO);
        assert_eq!(mounts[2].point, PathBuf::from("/home/u/ws/not env"));
        assert_eq!(names_in(&mounts, 67, &[]).unwrap(), vec!["/home/u/ws/.env"]);
        assert!(names_in(&mounts, 999, &[]).is_none());
    }

    #[test]
    fn the_mount_of_a_handle() {
        let here = std::fs::File::open("/").unwrap();
        let id = mount_of(&here).unwrap();
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(parse(&text).iter().any(|m| m.id == id));
    }
}
