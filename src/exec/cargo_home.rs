//! Feeds the command's own cargo home (`CARGO_HOME` in the private cache
//! root, `plan::caches`) from the host's `~/.cargo` at launch, so that
//! `cargo build --offline` of what the host holds works in it and a crate
//! the host lacks is downloaded into it.
//!
//! What it makes, from the host's home into the own one:
//! - `registry/cache/<reg>/<crate>.crate`, `registry/src/<reg>/<crate-dir>`,
//!   `git/checkouts/<repo>/<rev>` and the config files
//!   (`config.toml`, `config`, `credentials.toml`, `credentials`):
//!   symlinks to the host's. cargo only reads those (a `.crate`, a source
//!   tree with its `.cargo-ok`, a git database holding the locked
//!   revision); a write through a link lands on the host's file, which the
//!   sandbox keeps read-only as it would under its own name, and a read
//!   meets the host's `deny_read` as under its own name.
//! - `registry/index/<reg>/**` (the sparse index cache): copies, in
//!   directories of the own home. cargo rewrites an entry in place when the
//!   index has news; through a link that write fails and cargo warns
//!   (`warning: failed to write cache … Read-only file system`) on every
//!   online call. A copy is made when the own home has none, or has an
//!   older one (by modification time: a copy carries the host file's; one
//!   cargo rewrote in the sandbox is newer, and stays). A file the plan
//!   makes unreadable is linked instead, never copied.
//! - `git/db/<repo>`: a bare repository of its own whose
//!   `objects/info/alternates` names the host's database's objects, so a
//!   locked revision the host holds is found (offline too), and a fetch of
//!   a new one writes its pack into the own repository (measured: through
//!   a link to the host's, `cargo update -p` of a git dependency fails
//!   after three tries, `failed to create temporary file
//!   '…/objects/pack/pack_git2_…': Read-only file system`).
//!
//! Never hard links (a hard link is a writable name of the host's inode).
//! The own home is writable by the command, so everything there is made
//! through directory descriptors opened without following a symlink and
//! owned by the caller, and names are created with calls that never
//! follow one (`symlinkat`, `mkdirat`, `O_CREAT|O_EXCL|O_NOFOLLOW`, then
//! `renameat`, which replaces a name and never writes through it). An
//! entry already there is left as it is, whatever it is (the own home is
//! the command's), but for a link this feeding made whose host entry is
//! gone (cargo would find it dangling and fail to unpack there).

use super::caches::{cstr, open_own, Dir};
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// The host's cargo home, canonical, and whether a path may be read.
pub struct Host<'a> {
    pub base: PathBuf,
    pub readable: &'a dyn Fn(&Path) -> bool,
}

/// Brings the own home `own` (an open directory of the caller's) up to
/// date with the host's, unless nothing it looks at changed since the
/// last time (`stamp`). Errors stop one part, never the launch: what is
/// missing cargo downloads (or, offline, names).
pub fn feed(own: &Dir, host: &Host) {
    let before = stamp(own, &host.base);
    if read_stamp(own).as_deref() == Some(before.as_bytes()) {
        return;
    }
    feed_all(own, host);
    // What this feeding changed in the own home is in the stamp it leaves.
    let _ = write_stamp(own, stamp(own, &host.base).as_bytes());
}

const STAMP: &str = ".dcjail-fed";

/// What says the host's home (or the own one's fed directories) changed:
/// the identity, size and modification time of the directories the links
/// and copies are made from and into (an entry added or removed changes
/// its directory's), of the config files, and of cargo's own record of
/// use, `.global-cache`, which cargo writes on a call that downloads or
/// refreshes the index (an index entry rewritten in place changes no
/// directory). A 64-bit FNV-1a hash of those, as text.
fn stamp(own: &Dir, host: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut add = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    let mut host_paths: Vec<PathBuf> = vec![host.to_path_buf(), host.join(".global-cache")];
    for f in ["config.toml", "config", "credentials.toml", "credentials"] {
        host_paths.push(host.join(f));
    }
    let mut own_rel: Vec<PathBuf> = Vec::new();
    for kind in [
        "registry/cache",
        "registry/src",
        "registry/index",
        "git/db",
        "git/checkouts",
    ] {
        let k = host.join(kind);
        host_paths.push(k.clone());
        own_rel.push(PathBuf::from(kind));
        if kind == "git/db" {
            continue;
        }
        let mut subs: Vec<OsString> = std::fs::read_dir(&k)
            .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        subs.sort();
        for n in subs {
            host_paths.push(k.join(&n));
            own_rel.push(Path::new(kind).join(&n));
        }
    }
    for p in &host_paths {
        add(p.as_os_str().as_bytes());
        if let Ok(m) = std::fs::metadata(p) {
            for v in [m.dev(), m.ino(), m.size()] {
                add(&v.to_le_bytes());
            }
            add(&m.mtime().to_le_bytes());
            add(&m.mtime_nsec().to_le_bytes());
        }
    }
    for r in &own_rel {
        add(r.as_os_str().as_bytes());
        if let Some(st) = stat_at(own, r.as_os_str()) {
            add(&st.st_ino.to_le_bytes());
            add(&st.st_mtime.to_le_bytes());
            add(&st.st_mtime_nsec.to_le_bytes());
        }
    }
    format!("{h:016x}\n")
}

fn read_stamp(own: &Dir) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::io::FromRawFd;
    let n = CString::new(STAMP).ok()?;
    // SAFETY: a valid C string and an open directory; O_NOFOLLOW never
    // reads through a link planted there.
    let fd = unsafe {
        libc::openat(
            own.0,
            n.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is ours; the File closes it.
    let f = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut buf = Vec::new();
    f.take(64).read_to_end(&mut buf).ok()?;
    Some(buf)
}

fn write_stamp(own: &Dir, text: &[u8]) -> std::io::Result<()> {
    write_in(own, OsStr::new(STAMP), Data::Bytes(text), None)
}

fn feed_all(own: &Dir, host: &Host) {
    let registry = host.base.join("registry");
    if let Ok(reg) = sub(own, "registry") {
        for kind in ["cache", "src"] {
            let Ok(regs) = std::fs::read_dir(registry.join(kind)) else {
                continue;
            };
            let Ok(kdir) = sub(&reg, kind) else { continue };
            for r in regs.flatten() {
                if r.file_type().is_ok_and(|t| t.is_dir()) {
                    if let Ok(d) = sub(&kdir, r.file_name()) {
                        link_all(&d, &r.path());
                    }
                }
            }
        }
        if let Ok(regs) = std::fs::read_dir(registry.join("index")) {
            if let Ok(idx) = sub(&reg, "index") {
                for r in regs.flatten() {
                    if r.file_type().is_ok_and(|t| t.is_dir()) {
                        if let Ok(d) = sub(&idx, r.file_name()) {
                            copy_tree(&d, &r.path(), host, 8);
                        }
                    }
                }
            }
        }
    }
    let git = host.base.join("git");
    if git.is_dir() {
        if let Ok(g) = sub(own, "git") {
            if let (Ok(repos), Ok(db)) = (std::fs::read_dir(git.join("db")), sub(&g, "db")) {
                for r in repos.flatten() {
                    if r.file_type().is_ok_and(|t| t.is_dir()) {
                        if let Ok(d) = sub(&db, r.file_name()) {
                            let _ = git_db(&d, &r.path());
                        }
                    }
                }
            }
            if let (Ok(repos), Ok(co)) = (
                std::fs::read_dir(git.join("checkouts")),
                sub(&g, "checkouts"),
            ) {
                for r in repos.flatten() {
                    if r.file_type().is_ok_and(|t| t.is_dir()) {
                        if let Ok(d) = sub(&co, r.file_name()) {
                            link_all(&d, &r.path());
                        }
                    }
                }
            }
        }
    }
    for f in ["config.toml", "config", "credentials.toml", "credentials"] {
        let p = host.base.join(f);
        if std::fs::symlink_metadata(&p).is_ok() {
            let _ = link(own, OsStr::new(f), &p);
        }
    }
}

/// A bare repository of the own home's in `d` that borrows the objects of
/// the host's database `host` (git's `objects/info/alternates`): cargo
/// finds the revisions the host holds in it, offline too, and a fetch of a
/// new one writes into the own repository, never the host's. Made once;
/// from then on it is cargo's.
fn git_db(d: &Dir, host: &Path) -> std::io::Result<()> {
    if stat_at(d, OsStr::new("HEAD")).is_some() {
        return Ok(());
    }
    let objects = host.join("objects");
    let mut alt = objects.into_os_string().into_vec();
    if alt.contains(&b'\n') {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    alt.push(b'\n');
    let o = sub(d, "objects")?;
    sub(&o, "pack")?;
    let info = sub(&o, "info")?;
    write_in(&info, OsStr::new("alternates"), Data::Bytes(&alt), None)?;
    let refs = sub(d, "refs")?;
    sub(&refs, "heads")?;
    sub(&refs, "tags")?;
    write_in(
        d,
        OsStr::new("config"),
        Data::Bytes(b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"),
        None,
    )?;
    // Last: a directory without HEAD is no repository (cargo makes a new
    // one there), so a feeding cut short leaves nothing half made.
    write_in(
        d,
        OsStr::new("HEAD"),
        Data::Bytes(b"ref: refs/heads/master\n"),
        None,
    )
}

/// The directory `name` in `at`, made (0755, as cargo makes its own) if
/// missing, opened without following a symlink, the caller's.
pub(super) fn sub(at: &Dir, name: impl AsRef<OsStr>) -> std::io::Result<Dir> {
    let n = cstr(Path::new(name.as_ref()))?;
    // SAFETY: `n` is a valid C string and `at` an open directory.
    if unsafe { libc::mkdirat(at.0, n.as_ptr(), 0o755) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    open_own(Some(at), Path::new(name.as_ref()))
}

/// The names in the open directory `d` with whether each is a symlink.
fn names(d: &Dir) -> Vec<(OsString, bool)> {
    // A second descriptor: `fdopendir` takes ownership of the one it gets.
    // SAFETY: dup of a descriptor we own; the result is checked.
    let fd = unsafe { libc::fcntl(d.0, libc::F_DUPFD_CLOEXEC, 0) };
    if fd < 0 {
        return Vec::new();
    }
    // SAFETY: `fd` is ours; on failure we close it, on success `closedir`
    // does.
    let dirp = unsafe { libc::fdopendir(fd) };
    if dirp.is_null() {
        // SAFETY: `fd` is ours and not taken by fdopendir.
        unsafe { libc::close(fd) };
        return Vec::new();
    }
    // SAFETY: `dirp` is a valid stream; the dup'ed descriptor shares its
    // offset with `d`, so the stream starts from the beginning explicitly.
    unsafe { libc::rewinddir(dirp) };
    let mut out = Vec::new();
    loop {
        // SAFETY: `dirp` is a valid stream until closedir below.
        let ent = unsafe { libc::readdir(dirp) };
        if ent.is_null() {
            break;
        }
        // SAFETY: readdir returned a valid entry whose name is NUL-ended.
        let (name, ty) = unsafe {
            (
                std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()),
                (*ent).d_type,
            )
        };
        let b = name.to_bytes();
        if b == b"." || b == b".." {
            continue;
        }
        let is_link = if ty == libc::DT_UNKNOWN {
            stat_at(d, OsStr::from_bytes(b))
                .is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
        } else {
            ty == libc::DT_LNK
        };
        out.push((OsString::from_vec(b.to_vec()), is_link));
    }
    // SAFETY: `dirp` came from fdopendir and is closed once.
    unsafe { libc::closedir(dirp) };
    out
}

/// `fstatat` without following a final symlink.
fn stat_at(d: &Dir, name: &OsStr) -> Option<libc::stat> {
    let n = CString::new(name.as_bytes()).ok()?;
    // SAFETY: `st` is written by fstatat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `n` is a valid C string, `d` an open directory.
    let r = unsafe { libc::fstatat(d.0, n.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    (r == 0).then_some(st)
}

fn read_link_at(d: &Dir, name: &OsStr) -> Option<PathBuf> {
    let n = CString::new(name.as_bytes()).ok()?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: `buf` has the length given; `n` is a valid C string.
    let len = unsafe { libc::readlinkat(d.0, n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if len < 0 {
        return None;
    }
    buf.truncate(usize::try_from(len).ok()?);
    Some(PathBuf::from(OsString::from_vec(buf)))
}

/// `name` in `d`, a symlink to `target`; an existing name is left.
fn link(d: &Dir, name: &OsStr, target: &Path) -> std::io::Result<()> {
    let n = CString::new(name.as_bytes()).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    let t = cstr(target)?;
    // SAFETY: both are valid C strings and `d` an open directory.
    if unsafe { libc::symlinkat(t.as_ptr(), d.0, n.as_ptr()) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    Ok(())
}

fn unlink(d: &Dir, name: &OsStr) {
    if let Ok(n) = CString::new(name.as_bytes()) {
        // SAFETY: a valid C string; unlinkat never follows the name.
        unsafe { libc::unlinkat(d.0, n.as_ptr(), 0) };
    }
}

/// Every entry of `host` linked in `d` under its name; links this made to
/// entries of `host` that are gone are removed.
fn link_all(d: &Dir, host: &Path) {
    let Ok(rd) = std::fs::read_dir(host) else {
        return;
    };
    let have = names(d);
    let mut there = std::collections::BTreeSet::new();
    for e in rd.flatten() {
        let name = e.file_name();
        there.insert(name.clone());
        if !have.iter().any(|(n, _)| n == &name) {
            let _ = link(d, &name, &e.path());
        }
    }
    for (n, is_link) in have {
        if is_link && !there.contains(&n) && read_link_at(d, &n) == Some(host.join(&n)) {
            unlink(d, &n);
        }
    }
}

/// `host`'s tree copied into `d`: directories made, files copied where
/// the own home has none or an older one, `depth` levels at most.
fn copy_tree(d: &Dir, host: &Path, h: &Host, depth: u32) {
    let Ok(rd) = std::fs::read_dir(host) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Ok(t) = e.file_type() else { continue };
        let path = e.path();
        if t.is_dir() {
            if depth > 0 {
                if let Ok(sd) = sub(d, &name) {
                    copy_tree(&sd, &path, h, depth - 1);
                }
            }
            continue;
        }
        if !t.is_file() {
            continue;
        }
        if name.as_bytes().ends_with(TMP_SUFFIX) {
            continue;
        }
        if !(h.readable)(&path) {
            let _ = link(d, &name, &path);
            continue;
        }
        let Ok(m) = e.metadata() else { continue };
        let newer = match stat_at(d, &name) {
            None => true,
            Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG => {
                use std::os::unix::fs::MetadataExt;
                (st.st_mtime, st.st_mtime_nsec) < (m.mtime(), m.mtime_nsec())
            }
            Some(_) => false,
        };
        if newer {
            let _ = copy_in(d, &name, &path, &m);
        }
    }
}

const TMP_SUFFIX: &[u8] = b".dcjail-copy";

/// Copies `src` into `d` as `name`: written to a new file of its own
/// (never through an existing name), given `src`'s modification time,
/// then renamed over `name`.
fn copy_in(d: &Dir, name: &OsStr, src: &Path, m: &std::fs::Metadata) -> std::io::Result<()> {
    let mut from = std::fs::File::open(src)?;
    write_in(d, name, Data::File(&mut from), Some(m))
}

/// What `write_in` writes: bytes, or a file's contents (copied by the
/// kernel, `copy_file_range`, where it can).
enum Data<'a> {
    Bytes(&'a [u8]),
    File(&'a mut std::fs::File),
}

/// `data` written into `d` as `name` through a new file, with `m`'s
/// times when given.
fn write_in(
    d: &Dir,
    name: &OsStr,
    data: Data,
    m: Option<&std::fs::Metadata>,
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::io::FromRawFd;
    let mut tmp = name.as_bytes().to_vec();
    tmp.insert(0, b'.');
    tmp.extend_from_slice(TMP_SUFFIX);
    let tmp = OsString::from_vec(tmp);
    unlink(d, &tmp);
    let t = CString::new(tmp.as_bytes()).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    // SAFETY: a valid C string and an open directory; O_EXCL|O_NOFOLLOW
    // never opens an existing name.
    let fd = unsafe {
        libc::openat(
            d.0,
            t.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is ours; the File closes it.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let wrote = match data {
        Data::Bytes(b) => f.write_all(b),
        Data::File(from) => std::io::copy(from, &mut f).map(|_| ()),
    };
    let done = wrote.and_then(|()| {
        if let Some(m) = m {
            let ts = [
                libc::timespec {
                    tv_sec: m.atime(),
                    tv_nsec: m.atime_nsec(),
                },
                libc::timespec {
                    tv_sec: m.mtime(),
                    tv_nsec: m.mtime_nsec(),
                },
            ];
            // SAFETY: futimens on a descriptor we own with two timespecs.
            if unsafe { libc::futimens(fd, ts.as_ptr()) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        let n = CString::new(name.as_bytes()).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        // SAFETY: valid C strings in an open directory; rename replaces
        // the name `n`, never what it points to.
        if unsafe { libc::renameat(d.0, t.as_ptr(), d.0, n.as_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    });
    if done.is_err() {
        unlink(d, &tmp);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::current_dir()
            .unwrap()
            .join("target/unit-scratch")
            .join(format!("cargo-home-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    fn host_home(at: &Path) -> PathBuf {
        let h = at.join("host");
        let r = "reg-1";
        for (p, body) in [
            (format!("registry/cache/{r}/a-1.0.0.crate"), "crate a"),
            (format!("registry/src/{r}/a-1.0.0/.cargo-ok"), "{\"v\":1}"),
            (format!("registry/index/{r}/config.json"), "{}"),
            (format!("registry/index/{r}/.cache/1/a"), "index a"),
            ("git/db/repo-1/HEAD".to_string(), "ref"),
            ("git/checkouts/repo-1/abc/.cargo-ok".to_string(), "ok"),
            ("config.toml".to_string(), "[net]\n"),
        ] {
            let p = h.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        h
    }

    fn fed(at: &Path, host: &Path, readable: &dyn Fn(&Path) -> bool) -> PathBuf {
        let own = at.join("own");
        std::fs::create_dir_all(&own).unwrap();
        let d = open_own(None, &own).unwrap();
        feed(
            &d,
            &Host {
                base: host.to_path_buf(),
                readable,
            },
        );
        own
    }

    #[test]
    fn the_own_home_links_the_hosts_files_and_copies_its_index() {
        let s = scratch("feed");
        let host = host_home(&s);
        let own = fed(&s, &host, &|_| true);
        for p in [
            "registry/cache/reg-1/a-1.0.0.crate",
            "registry/src/reg-1/a-1.0.0",
            "git/checkouts/repo-1/abc",
            "config.toml",
        ] {
            let l = std::fs::read_link(own.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert_eq!(l, host.join(p));
        }
        assert_eq!(
            std::fs::read(own.join("git/db/repo-1/objects/info/alternates")).unwrap(),
            format!("{}\n", host.join("git/db/repo-1/objects").display()).into_bytes()
        );
        assert!(std::fs::symlink_metadata(own.join("git/db/repo-1/HEAD"))
            .unwrap()
            .is_file());
        let idx = own.join("registry/index/reg-1/.cache/1/a");
        let m = std::fs::symlink_metadata(&idx).unwrap();
        assert!(m.file_type().is_file());
        assert_eq!(std::fs::read(&idx).unwrap(), b"index a");
        // A copy cargo rewrote (newer) stays; an older one is replaced.
        std::fs::write(&idx, b"cargo's").unwrap();
        fed(&s, &host, &|_| true);
        assert_eq!(std::fs::read(&idx).unwrap(), b"cargo's");
        let old = std::fs::File::options().write(true).open(&idx).unwrap();
        old.set_modified(std::time::UNIX_EPOCH).unwrap();
        drop(old);
        // Nothing the stamp looks at changed: no feeding at all.
        fed(&s, &host, &|_| true);
        assert_eq!(std::fs::read(&idx).unwrap(), b"cargo's");
        // The host's cargo wrote its record of use: fed again.
        std::fs::write(host.join(".global-cache"), b"used").unwrap();
        fed(&s, &host, &|_| true);
        assert_eq!(std::fs::read(&idx).unwrap(), b"index a");
        // A host entry removed: its link goes; one of the command's stays.
        std::fs::remove_file(host.join("registry/cache/reg-1/a-1.0.0.crate")).unwrap();
        symlink("/nowhere", own.join("registry/cache/reg-1/mine.crate")).unwrap();
        fed(&s, &host, &|_| true);
        assert!(std::fs::symlink_metadata(own.join("registry/cache/reg-1/a-1.0.0.crate")).is_err());
        assert!(std::fs::symlink_metadata(own.join("registry/cache/reg-1/mine.crate")).is_ok());
        std::fs::remove_dir_all(&s).unwrap();
    }

    #[test]
    fn an_unreadable_index_file_is_linked_never_copied() {
        let s = scratch("denied");
        let host = host_home(&s);
        let own = fed(&s, &host, &|p| !p.ends_with(".cache/1/a"));
        let idx = own.join("registry/index/reg-1/.cache/1/a");
        assert_eq!(
            std::fs::read_link(&idx).unwrap(),
            host.join("registry/index/reg-1/.cache/1/a")
        );
        std::fs::remove_dir_all(&s).unwrap();
    }

    #[test]
    fn a_symlink_planted_in_the_own_home_is_never_followed() {
        let s = scratch("planted");
        let host = host_home(&s);
        let elsewhere = s.join("elsewhere");
        std::fs::create_dir_all(elsewhere.join("reg-1/.cache/1")).unwrap();
        std::fs::write(elsewhere.join("reg-1/.cache/1/a"), b"theirs").unwrap();
        let own = s.join("own");
        std::fs::create_dir_all(own.join("registry/index")).unwrap();
        std::fs::create_dir_all(own.join("registry/cache")).unwrap();
        // A directory replaced by a link elsewhere, and a file name that
        // is a link to a file elsewhere.
        symlink(&elsewhere, own.join("registry/src")).unwrap();
        symlink(elsewhere.join("reg-1"), own.join("registry/index/reg-1")).unwrap();
        std::fs::create_dir_all(own.join("git")).unwrap();
        symlink(elsewhere.join("reg-1/.cache/1/a"), own.join("config.toml")).unwrap();
        fed(&s, &host, &|_| true);
        assert_eq!(
            std::fs::read(elsewhere.join("reg-1/.cache/1/a")).unwrap(),
            b"theirs"
        );
        let listed: Vec<_> = std::fs::read_dir(&elsewhere)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(listed, vec![OsString::from("reg-1")]);
        // Elsewhere, what could be fed still is.
        assert!(std::fs::read_link(own.join("registry/cache/reg-1/a-1.0.0.crate")).is_ok());
        std::fs::remove_dir_all(&s).unwrap();
    }

    #[test]
    fn an_index_file_planted_as_a_link_is_replaced_not_written_through() {
        let s = scratch("tmpname");
        let host = host_home(&s);
        let victim = s.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let dir = s.join("own/registry/index/reg-1/.cache/1");
        std::fs::create_dir_all(&dir).unwrap();
        // The temporary name planted as a link to a file elsewhere.
        symlink(&victim, dir.join(".a.dcjail-copy")).unwrap();
        let own = fed(&s, &host, &|_| true);
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(
            std::fs::read(own.join("registry/index/reg-1/.cache/1/a")).unwrap(),
            b"index a"
        );
        std::fs::remove_dir_all(&s).unwrap();
    }
}
