//! Machines dcjail cannot be run on here, simulated through the host-probe
//! interface (`backend::host::Probe`) the real code asks: Ubuntu 24.04's
//! AppArmor restriction of user namespaces (with and without a profile, for
//! the distribution's bwrap and another one), Debian's
//! unprivileged_userns_clone, `user.max_user_namespaces = 0`, a container's
//! seccomp filter, kernels without landlock (not built, not in the LSM list,
//! refused by a filter, too old), WSL1 and WSL2. For each: the obstacle's
//! words and fix, `doctor`'s checks, status and exit status, and `auto`'s
//! choice with the reason `explain` shows. The same environments run for
//! real, where this machine can make them, in tests/environments.rs.
#![cfg(target_os = "linux")]

#[path = "support/scratch.rs"]
mod scratch;

use dcjail::backend::host::{NsCalls, Probe, Sys};
use dcjail::backend::obstacle::{self, AppArmor, Obstacle};
use dcjail::backend::report::{Overall, Report, Status};
use dcjail::backend::Kind;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Made-up answers. Unset files are missing.
struct Fake {
    files: HashMap<String, String>,
    names: HashSet<String>,
    env: HashMap<String, String>,
    euid: u32,
    kernel: String,
    filtered: bool,
    landlock: Sys,
    ns: NsCalls,
    mount: Option<Sys>,
    links: HashMap<PathBuf, PathBuf>,
    setuid: bool,
    bwrap: Result<PathBuf, String>,
    bwrap_run: Result<(), String>,
    netlink: Sys,
}

impl Fake {
    /// An ordinary Linux 6.12 desktop: nothing in the way.
    fn linux() -> Fake {
        let mut f = Fake {
            files: HashMap::new(),
            names: HashSet::new(),
            env: HashMap::new(),
            euid: 1000,
            kernel: "6.12.9-generic".into(),
            filtered: false,
            landlock: Sys::Ok(6),
            ns: NsCalls::Unfiltered,
            mount: None,
            links: HashMap::new(),
            setuid: false,
            bwrap: Ok("/usr/bin/bwrap".into()),
            bwrap_run: Ok(()),
            netlink: Sys::Ok(3),
        };
        f.file(
            "/proc/version",
            "Linux version 6.12.9-generic (buildd@lcy02) (gcc 14.2.0) #1 SMP",
        );
        f.file("/proc/sys/user/max_user_namespaces", "63183\n");
        f.file(
            "/sys/kernel/security/lsm",
            "lockdown,capability,landlock,yama,apparmor",
        );
        f
    }

    /// Ubuntu 24.04: AppArmor restricts unprivileged user namespaces.
    fn ubuntu_2404() -> Fake {
        let mut f = Fake::linux();
        f.file(
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1\n",
        );
        f.file("/sys/module/apparmor/parameters/enabled", "Y\n");
        // What bwrap says there when nothing lets it have its namespace.
        f.bwrap_run = Err("bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted".into());
        f
    }

    fn file(&mut self, path: &str, text: &str) -> &mut Fake {
        self.files.insert(path.into(), text.into());
        self
    }

    fn profile(&mut self, name: &str, text: &str) -> &mut Fake {
        let path = format!("/etc/apparmor.d/{name}");
        self.files.insert(path, text.into());
        self
    }
}

impl Probe for Fake {
    fn read(&self, path: &str) -> Option<String> {
        self.files.get(path).cloned()
    }
    fn exists(&self, path: &str) -> bool {
        self.files.contains_key(path) || self.names.contains(path)
    }
    fn list(&self, dir: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .files
            .keys()
            .chain(self.names.iter())
            .filter_map(|p| p.strip_prefix(&format!("{dir}/")))
            .filter(|rest| !rest.contains('/'))
            .map(String::from)
            .collect();
        v.sort();
        v.dedup();
        v
    }
    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }
    fn euid(&self) -> u32 {
        self.euid
    }
    fn kernel_release(&self) -> String {
        self.kernel.clone()
    }
    fn seccomp_filtered(&self) -> bool {
        self.filtered
    }
    fn seccomp_available(&self) -> Result<(), String> {
        Ok(())
    }
    fn landlock_abi(&self) -> Sys {
        self.landlock
    }
    fn ns_calls(&self) -> NsCalls {
        self.ns
    }
    fn mount_call(&self) -> Option<Sys> {
        self.mount
    }
    fn netlink_route(&self) -> Sys {
        self.netlink
    }
    fn canonical(&self, p: &Path) -> Option<PathBuf> {
        Some(
            self.links
                .get(p)
                .cloned()
                .unwrap_or_else(|| p.to_path_buf()),
        )
    }
    fn setuid_root(&self, _p: &Path) -> bool {
        self.setuid
    }
    fn bwrap(&self) -> Result<PathBuf, String> {
        self.bwrap.clone()
    }
    fn bwrap_version(&self, _bwrap: &Path) -> Option<(u32, u32, u32)> {
        Some((0, 9, 0))
    }
    fn try_bwrap(&self, _bwrap: &Path, _net: bool) -> Result<(), String> {
        self.bwrap_run.clone()
    }
    fn second_stage(&self) -> Result<(), String> {
        Ok(())
    }
}

/// A profile as a distribution's apparmor-profiles ships it: attached to
/// /usr/bin/bwrap, granting userns (the words are this test's own).
const DISTRO: &str = "abi <abi/4.0>,\ninclude <tunables/global>\n\
    profile bwrap /usr/bin/bwrap flags=(attach_disconnected) {\n  allow userns,\n  allow capability,\n}\n\
    profile unpriv_bwrap flags=(attach_disconnected) {\n  audit deny capability,\n}\n";

fn quick(p: &Fake) -> Option<Obstacle> {
    let b = p.bwrap.clone().unwrap();
    obstacle::userns_obstacle(p, &b)
}

fn check<'a>(r: &'a Report, id: &str) -> &'a dcjail::backend::report::Check {
    r.checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no `{id}` check in {:#?}", r.checks))
}

fn works(r: &Report, k: Kind) -> bool {
    r.backends.iter().any(|b| b.kind == k && b.works)
}

/// The failing checks, one per obstacle: (id, fix).
fn failing(r: &Report) -> Vec<(&str, String)> {
    r.checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| (c.id, c.fix.clone().unwrap_or_default()))
        .collect()
}

/// A real plan for `auto` to choose a backend for, in a fresh directory.
fn make_plan(workspace_write: bool) -> (dcjail::plan::Plan, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "host-probe-{}-{}",
        std::process::id(),
        workspace_write
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = std::fs::canonicalize(&dir).unwrap();
    let mut policy = dcjail::policy::Policy::embedded().unwrap();
    policy.sandbox.workspace = Some(dir.clone());
    if workspace_write {
        policy.sandbox.mode = dcjail::policy::SandboxMode::WorkspaceWrite;
    }
    let facts = dcjail::plan::Facts {
        cwd: dir.clone(),
        home: None,
        tmpdir: None,
        exe: None,
        ..Default::default()
    };
    let p = dcjail::plan::build(&policy, vec!["true".into()], &facts).unwrap();
    (p, dir)
}

#[test]
fn ubuntu_2404_without_a_profile_auto_uses_landlock_and_doctor_says_setup_apparmor() {
    let p = Fake::ubuntu_2404();
    let o = quick(&p).expect("an obstacle");
    assert_eq!(o.check_id(), "apparmor-userns");
    let m = o.message();
    assert!(
        m.contains("kernel.apparmor_restrict_unprivileged_userns = 1"),
        "{m}"
    );
    assert!(
        m.contains("/usr/bin/bwrap, the bubblewrap dcjail uses"),
        "{m}"
    );
    assert!(
        o.fix().starts_with("sudo dcjail setup apparmor --install"),
        "{}",
        o.fix()
    );

    let r = dcjail::backend::doctor_report_with(&p);
    assert!(!works(&r, Kind::Bwrap));
    assert!(works(&r, Kind::Landlock));
    assert_eq!(r.overall(), Overall::Degraded);
    assert_eq!(r.auto(), Some(Kind::Landlock));
    assert_eq!(dcjail::doctor::exit_status(&r), 0);
    assert_eq!(
        failing(&r).iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        vec!["apparmor-userns", "bwrap-sandbox"]
    );
    assert!(check(&r, "apparmor-userns")
        .fix
        .as_deref()
        .unwrap()
        .contains("setup apparmor --install"));
    // bwrap's failure is the one foreseen: no second fix for it.
    assert_eq!(check(&r, "bwrap-sandbox").fix, None);
    let j = dcjail::doctor::to_json(&r);
    assert_eq!(j["schema"], 1);
    assert_eq!(j["status"], "degraded");
    assert_eq!(j["auto"], "landlock");
    assert_eq!(j["exit_status"], 0);
    let text = dcjail::doctor::to_text(&r);
    assert!(
        text.contains("apparmor-userns (fail): AppArmor restricts"),
        "{text}"
    );
    assert!(
        text.contains("fix: sudo dcjail setup apparmor --install"),
        "{text}"
    );
    assert!(text.contains("status: degraded"), "{text}");
}

#[test]
fn ubuntu_2404_auto_falls_back_to_landlock_with_the_reason_in_explain() {
    if !scratch::need("bwrap") {
        return;
    }
    let p = Fake::ubuntu_2404();
    let (plan, dir) = make_plan(false);
    let choice = dcjail::backend::select_with(&plan, &p).unwrap();
    assert_eq!(choice.kind, Some(Kind::Landlock));
    let v = dcjail::explain::run_json(&plan, &choice);
    assert_eq!(v["backend"], "landlock");
    assert_eq!(v["passed_over"][0]["backend"], "bwrap");
    let why = v["passed_over"][0]["why"].as_str().unwrap();
    assert!(
        why.contains("AppArmor restricts unprivileged user namespaces"),
        "{why}"
    );
    assert!(
        why.contains("fix: sudo dcjail setup apparmor --install"),
        "{why}"
    );

    // A policy only bwrap enforces (protected paths inside a writable root)
    // is refused, naming both: nothing can start.
    let (plan, dir2) = make_plan(true);
    let r = dcjail::backend::select_with(&plan, &p).unwrap_err();
    assert_eq!(r.exit_code(), 122);
    assert!(
        r.message.contains("bwrap: AppArmor restricts"),
        "{}",
        r.message
    );
    assert!(r.message.contains("landlock: "), "{}", r.message);

    // With the profile `dcjail setup apparmor` writes, bwrap is chosen.
    let mut p = p;
    p.bwrap_run = Ok(());
    let bwrap =
        dcjail::backend::bwrap::find(&dcjail::plan::Facts::gather().unwrap(), Some(&plan)).unwrap();
    p.bwrap = Ok(bwrap.clone());
    p.profile(
        "dcjail-bwrap",
        &dcjail::setup::render(&std::fs::canonicalize(&bwrap).unwrap()).unwrap(),
    );
    p.links
        .insert(bwrap.clone(), std::fs::canonicalize(&bwrap).unwrap());
    let choice = dcjail::backend::select_with(&plan, &p).unwrap();
    assert_eq!(choice.kind, Some(Kind::Bwrap));
    assert!(choice.passed_over.is_empty());
    for d in [dir, dir2] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn the_distribution_profile_covers_only_usr_bin_bwrap() {
    let mut p = Fake::ubuntu_2404();
    p.profile("bwrap-userns-restrict", DISTRO);
    assert_eq!(quick(&p), None);
    assert_eq!(
        obstacle::apparmor(&p, Path::new("/usr/bin/bwrap")),
        AppArmor::Covered {
            file: "bwrap-userns-restrict".into()
        }
    );
    // A bwrap reached through a symlink is judged by where it leads.
    p.links.insert("/bin/bwrap".into(), "/usr/bin/bwrap".into());
    assert_eq!(obstacle::userns_obstacle(&p, Path::new("/bin/bwrap")), None);

    p.bwrap = Ok("/usr/local/bin/bwrap".into());
    let o = quick(&p).expect("an obstacle for /usr/local/bin/bwrap");
    let m = o.message();
    assert!(
        m.contains("no AppArmor profile grants `userns` to /usr/local/bin/bwrap"),
        "{m}"
    );
    assert!(
        m.contains("(/etc/apparmor.d/bwrap-userns-restrict covers only /usr/bin/bwrap)"),
        "{m}"
    );
}

#[test]
fn a_disabled_profile_covers_nothing() {
    let mut p = Fake::ubuntu_2404();
    p.profile("bwrap-userns-restrict", DISTRO);
    p.names
        .insert("/etc/apparmor.d/disable/bwrap-userns-restrict".into());
    assert!(matches!(quick(&p), Some(Obstacle::AppArmorUserns { .. })));
}

#[test]
fn dcjails_own_profile_covers_the_bwrap_it_was_written_for_and_no_other() {
    let mut p = Fake::ubuntu_2404();
    p.bwrap = Ok("/usr/local/bin/bwrap".into());
    p.profile(
        "dcjail-bwrap",
        &dcjail::setup::render(Path::new("/usr/local/bin/bwrap")).unwrap(),
    );
    assert_eq!(quick(&p), None);
    p.bwrap = Ok("/opt/bwrap/bin/bwrap".into());
    assert!(matches!(quick(&p), Some(Obstacle::AppArmorUserns { .. })));
}

#[test]
fn any_profile_file_that_grants_userns_to_that_bwrap_is_found() {
    let mut p = Fake::ubuntu_2404();
    p.bwrap = Ok("/usr/local/bin/bwrap".into());
    p.profile(
        "firefox",
        "profile firefox /usr/lib/firefox/firefox flags=(unconfined) {\n  userns,\n}\n",
    );
    p.profile(
        "local-bwrap",
        "abi <abi/4.0>,\nprofile lb /usr/local/bin/bwrap flags=(unconfined) {\n  userns,\n}\n",
    );
    assert_eq!(
        obstacle::apparmor(&p, Path::new("/usr/local/bin/bwrap")),
        AppArmor::Covered {
            file: "local-bwrap".into()
        }
    );
    // A profile under a name that does not say bwrap is not looked for on
    // every launch; doctor's real run then shows the difference.
    let mut q = Fake::ubuntu_2404();
    q.bwrap = Ok("/usr/local/bin/bwrap".into());
    q.profile(
        "my-sandbox",
        "profile lb /usr/local/bin/bwrap flags=(unconfined) {\n  userns,\n}\n",
    );
    assert!(quick(&q).is_some());
    q.bwrap_run = Ok(());
    let r = dcjail::backend::doctor_report_with(&q);
    assert!(check(&r, "apparmor-userns")
        .message
        .contains("bwrap did create its namespaces just now"));
    // Attached but without `userns`: no help.
    let mut p = Fake::ubuntu_2404();
    p.profile(
        "bwrap",
        "profile bwrap /usr/bin/bwrap {\n  capability,\n}\n",
    );
    assert!(quick(&p).is_some());
}

#[test]
fn root_and_a_setuid_bwrap_are_not_restricted() {
    let mut p = Fake::ubuntu_2404();
    p.euid = 0;
    assert_eq!(quick(&p), None);
    let mut p = Fake::ubuntu_2404();
    p.setuid = true;
    assert_eq!(quick(&p), None);
}

#[test]
fn debian_unprivileged_userns_clone_off() {
    let mut p = Fake::linux();
    p.file("/proc/sys/kernel/unprivileged_userns_clone", "0\n");
    let o = quick(&p).unwrap();
    assert_eq!(o, Obstacle::UnprivilegedUsernsOff);
    assert!(o
        .fix()
        .contains("sudo sysctl -w kernel.unprivileged_userns_clone=1"));
    p.euid = 0;
    assert_eq!(quick(&p), None);
}

#[test]
fn max_user_namespaces_zero_stops_root_too() {
    let mut p = Fake::linux();
    p.file("/proc/sys/user/max_user_namespaces", "0\n");
    p.bwrap_run = Err("bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)".into());
    for euid in [1000, 0] {
        p.euid = euid;
        let o = quick(&p).unwrap();
        assert!(o.message().contains("user.max_user_namespaces = 0"));
        assert!(o
            .fix()
            .contains("sudo sysctl -w user.max_user_namespaces=15000"));
    }
    let r = dcjail::backend::doctor_report_with(&p);
    assert_eq!(r.overall(), Overall::Degraded);
    assert_eq!(
        failing(&r).iter().map(|f| f.0).collect::<Vec<_>>(),
        vec!["user-namespaces", "bwrap-sandbox"]
    );
}

/// Root in a container started with `--cap-drop ALL` (measured on Docker
/// 20.10.24: bwrap says `setting up uid map: Operation not permitted`).
#[test]
fn root_without_cap_setfcap_cannot_map_itself_and_says_so() {
    let mut p = Fake::linux();
    p.names.insert("/.dockerenv".into());
    p.euid = 0;
    p.bwrap_run = Err("bwrap: setting up uid map: Operation not permitted".into());
    // Every capability but CAP_SETFCAP (bit 31).
    p.file(
        "/proc/self/status",
        "Name:\tdcjail\nCapEff:\t000001ff7fffffff\n",
    );
    let o = quick(&p).unwrap();
    assert_eq!(
        o,
        Obstacle::RootWithoutSetfcap {
            container: Some("docker".into()),
            outer: None
        }
    );
    let m = o.message();
    assert!(
        m.contains("uid 0 without CAP_SETFCAP cannot map itself into a new user namespace"),
        "{m}"
    );
    assert!(o.fix().contains("--user UID:GID") && o.fix().contains("--cap-add SETFCAP"));
    let r = dcjail::backend::doctor_report_with(&p);
    assert_eq!(check(&r, "user-namespaces").status, Status::Fail);
    assert_eq!(r.auto(), Some(Kind::Landlock));
    // With the capability (root on a host, Docker's default set): none.
    p.file(
        "/proc/self/status",
        "Name:\tdcjail\nCapEff:\t000001ffffffffff\n",
    );
    assert_eq!(quick(&p), None);
    // Before Linux 5.12 the kernel did not ask for it.
    p.file(
        "/proc/self/status",
        "Name:\tdcjail\nCapEff:\t0000000000000000\n",
    );
    assert!(quick(&p).is_some());
    p.kernel = "5.10.0-21-amd64".into();
    assert_eq!(quick(&p), None);
    // Another user maps its own uid and needs no capability.
    p.kernel = "6.1.0-9-amd64".into();
    p.euid = 1000;
    assert_eq!(quick(&p), None);
}

/// A container's masked /proc (Docker without `systempaths=unconfined`),
/// measured on Docker 20.10.24: bwrap says `Can't mount proc`.
#[test]
fn a_masked_proc_is_named_with_the_runtime_settings_that_unmask_it() {
    let mut p = Fake::linux();
    p.names.insert("/.dockerenv".into());
    p.bwrap_run = Err("bwrap: Can't mount proc on /newroot/proc: Operation not permitted".into());
    p.file(
        "/proc/self/mountinfo",
        "1 0 0:1 / / rw - overlay overlay rw\n\
         2 1 0:2 / /proc rw - proc proc rw\n\
         3 2 0:3 /null /proc/kcore rw - devtmpfs udev rw\n\
         4 2 0:4 / /proc/acpi ro - tmpfs tmpfs ro\n",
    );
    assert_eq!(quick(&p), None);
    let r = dcjail::backend::doctor_report_with(&p);
    let c = check(&r, "bwrap-sandbox");
    assert_eq!(c.status, Status::Fail);
    assert!(
        c.message.contains("while paths of the /proc above are covered by other mounts (/proc/acpi, /proc/kcore), as container runtimes mask them"),
        "{}",
        c.message
    );
    let fix = c.fix.clone().unwrap_or_default();
    assert!(
        fix.contains("systempaths=unconfined") && fix.contains("procMount: Unmasked"),
        "{fix}"
    );
    // Without a covered path in sight (a sandbox around dcjail may hide
    // them), the same words without the list.
    p.file(
        "/proc/self/mountinfo",
        "2 1 0:2 / /proc rw - proc proc rw\n",
    );
    let r = dcjail::backend::doctor_report_with(&p);
    assert!(check(&r, "bwrap-sandbox").message.ends_with(
        "while paths of the /proc above are covered by other mounts, as container runtimes mask them"
    ));
}

#[test]
fn a_docker_like_seccomp_filter_refusing_namespace_flags() {
    let mut p = Fake::linux();
    p.names.insert("/.dockerenv".into());
    p.filtered = true;
    p.ns = NsCalls::Filtered {
        unshare: Sys::Err(libc::EPERM),
        clone: Sys::Err(libc::EPERM),
    };
    p.bwrap_run = Err("bwrap: No permissions to create new namespace".into());
    let o = quick(&p).unwrap();
    let m = o.message();
    assert!(m.contains("a seccomp filter refuses namespace creation: unshare with CLONE_NEWUSER failed with EPERM"), "{m}");
    assert!(m.contains("inside a docker container"), "{m}");
    assert!(o.fix().contains("--security-opt seccomp="), "{}", o.fix());
    assert!(o.fix().contains("--backend landlock"));
    let r = dcjail::backend::doctor_report_with(&p);
    assert_eq!(check(&r, "container").status, Status::Info);
    assert_eq!(r.auto(), Some(Kind::Landlock));
    // A filter that kills instead is named too, and only clone refused.
    p.ns = NsCalls::Filtered {
        unshare: Sys::Err(libc::EINVAL),
        clone: Sys::Killed(libc::SIGSYS),
    };
    let m = quick(&p).unwrap().message();
    assert!(
        m.contains("clone with CLONE_NEWUSER killed the process asking"),
        "{m}"
    );
    // A filter that lets namespace creation through is no obstacle.
    p.ns = NsCalls::Filtered {
        unshare: Sys::Err(libc::EINVAL),
        clone: Sys::Err(libc::EINVAL),
    };
    assert_eq!(quick(&p), None);
}

#[test]
fn a_seccomp_filter_refusing_mount_is_foreseen_and_named() {
    let mut p = Fake::linux();
    p.filtered = true;
    p.ns = NsCalls::Filtered {
        unshare: Sys::Err(libc::EINVAL),
        clone: Sys::Err(libc::EINVAL),
    };
    p.mount = Some(Sys::Err(libc::EPERM));
    p.bwrap_run = Err("bwrap: Failed to make / slave: Operation not permitted".into());
    for euid in [1000, 0] {
        p.euid = euid;
        let o = quick(&p).unwrap();
        assert_eq!(o.check_id(), "mounts");
        assert_eq!(
            o.message(),
            "a seccomp filter refuses mounts: mount failed with EPERM, before the kernel saw \
             it, so bubblewrap cannot build the sandbox's mounts"
        );
        assert!(o.fix().contains("allows mount, umount2 and pivot_root"));
    }
    let r = dcjail::backend::doctor_report_with(&p);
    assert_eq!(r.auto(), Some(Kind::Landlock));
    // (Under a filter that holds no listener for it, seccomp-notify fails too.)
    assert_eq!(
        failing(&r).iter().map(|f| f.0).take(2).collect::<Vec<_>>(),
        vec!["mounts", "bwrap-sandbox"]
    );
    assert!(check(&r, "bwrap-sandbox")
        .message
        .ends_with("as the mounts check foresaw"));
    // The kernel's own answer (EINVAL: the flag is refused) is no obstacle.
    p.mount = Some(Sys::Err(libc::EINVAL));
    p.bwrap_run = Ok(());
    assert_eq!(quick(&p), None);
    assert_eq!(
        check(&dcjail::backend::doctor_report_with(&p), "mounts").status,
        Status::Ok
    );
}

#[test]
fn kernels_without_usable_landlock_leave_bwrap_without_its_inner_layer() {
    // Not built in.
    let mut p = Fake::linux();
    p.kernel = "5.10.0-28-amd64".into();
    p.landlock = Sys::Err(libc::ENOSYS);
    let o = obstacle::landlock_abi(&p).unwrap_err();
    assert!(o
        .message()
        .contains("not built into this kernel (5.10.0-28-amd64)"));
    assert!(o.fix().contains("CONFIG_SECURITY_LANDLOCK=y"));
    let r = dcjail::backend::doctor_report_with(&p);
    assert_eq!(r.overall(), Overall::Degraded);
    assert_eq!(r.auto(), Some(Kind::Bwrap));
    assert_eq!(dcjail::doctor::exit_status(&r), 0);
    assert_eq!(
        failing(&r).iter().map(|f| f.0).collect::<Vec<_>>(),
        vec!["landlock"]
    );
    assert!(!works(&r, Kind::Landlock));
    let bw = r.backends.iter().find(|b| b.kind == Kind::Bwrap).unwrap();
    assert!(
        bw.details.iter().any(|d| d
            .contains("second stage: without landlock (landlock is not built")
            && d.contains("runs without its inner layer")
            && d.contains("refused, naming the feature (exit 122): network full")),
        "{bw:?}"
    );
    assert!(bw
        .fix
        .as_deref()
        .unwrap()
        .contains("CONFIG_SECURITY_LANDLOCK=y"));
    assert_eq!(dcjail::doctor::to_json(&r)["status"], "degraded");
    assert!(
        dcjail::doctor::summary(&r).contains("runs here with bwrap, without landlock"),
        "{}",
        dcjail::doctor::summary(&r)
    );

    // Built in, not in the LSM list: the fix keeps the list and adds it.
    let mut p = Fake::linux();
    p.landlock = Sys::Err(libc::EOPNOTSUPP);
    p.file(
        "/sys/kernel/security/lsm",
        "lockdown,capability,yama,apparmor\n",
    );
    let o = obstacle::landlock_abi(&p).unwrap_err();
    assert!(o
        .message()
        .contains("not in the LSM list (lockdown,capability,yama,apparmor)"));
    assert!(
        o.fix()
            .contains("lsm=lockdown,capability,yama,apparmor,landlock"),
        "{}",
        o.fix()
    );
    // Without securityfs, the boot parameter tells the list.
    p.files.remove("/sys/kernel/security/lsm");
    p.file(
        "/proc/cmdline",
        "BOOT_IMAGE=/vmlinuz root=/dev/sda1 lsm=yama,apparmor quiet\n",
    );
    assert!(obstacle::landlock_abi(&p)
        .unwrap_err()
        .fix()
        .contains("lsm=yama,apparmor,landlock"));

    // Too old for signal and abstract-socket scoping.
    let mut p = Fake::linux();
    p.kernel = "6.8.0-45-generic".into();
    p.landlock = Sys::Ok(4);
    let o = obstacle::landlock_at_least(&p, 6).unwrap_err();
    assert!(
        o.message().contains(
            "landlock ABI 4 in this kernel (6.8.0-45-generic): ABI 6 (Linux 6.12) is needed"
        ),
        "{}",
        o.message()
    );
    assert_eq!(
        dcjail::backend::doctor_report_with(&p).overall(),
        Overall::Degraded
    );
}

#[test]
fn landlock_refused_by_a_seccomp_filter() {
    // ENOSYS under a filter while the LSM list names landlock: the filter's.
    let mut p = Fake::linux();
    p.filtered = true;
    p.landlock = Sys::Err(libc::ENOSYS);
    let o = obstacle::landlock_abi(&p).unwrap_err();
    assert!(
        matches!(o, Obstacle::LandlockFiltered { sure: true, .. }),
        "{o:?}"
    );
    assert!(o
        .message()
        .starts_with("a seccomp filter refuses landlock's system calls"));
    assert!(o
        .fix()
        .contains("landlock_create_ruleset, landlock_add_rule and landlock_restrict_self"));
    // Without the LSM list it may be either; both are said.
    p.files.remove("/sys/kernel/security/lsm");
    let m = obstacle::landlock_abi(&p).unwrap_err().message();
    assert!(
        m.contains("the filter refuses landlock's system calls, or the kernel lacks landlock"),
        "{m}"
    );
    // EPERM is never the kernel's answer to the version query.
    p.landlock = Sys::Err(libc::EPERM);
    assert!(matches!(
        obstacle::landlock_abi(&p).unwrap_err(),
        Obstacle::LandlockFiltered { sure: true, .. }
    ));
    // bwrap runs without its inner layer (and, under a filter this fake
    // answers as holding the listener, without a broker): degraded.
    let r = dcjail::backend::doctor_report_with(&p);
    assert_eq!(r.overall(), Overall::Degraded);
    assert_eq!(r.auto(), Some(Kind::Bwrap));
    assert_eq!(check(&r, "seccomp-notify").status, Status::Fail);
}

#[test]
fn wsl2_says_what_holds_and_how_to_get_landlock() {
    let mut p = Fake::linux();
    p.kernel = "5.15.167.4-microsoft-standard-WSL2".into();
    p.file(
        "/proc/version",
        "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc (GCC) 11.2.0) #1 SMP",
    );
    p.landlock = Sys::Err(libc::EOPNOTSUPP);
    p.files.remove("/sys/kernel/security/lsm");
    let r = dcjail::backend::doctor_report_with(&p);
    let w = check(&r, "wsl");
    assert_eq!(w.status, Status::Info);
    assert!(
        w.message.starts_with(
            "WSL2 (kernel 5.15.167.4-microsoft-standard-WSL2): user namespaces and bubblewrap work"
        ),
        "{}",
        w.message
    );
    assert!(
        w.message.contains("landlock is not usable"),
        "{}",
        w.message
    );
    let l = check(&r, "landlock");
    assert_eq!(l.status, Status::Fail);
    let fix = l.fix.as_deref().unwrap();
    assert!(
        fix.contains("kernelCommandLine = lsm=") && fix.contains(".wslconfig"),
        "{fix}"
    );
    assert_eq!(r.overall(), Overall::Degraded);
    assert_eq!(r.auto(), Some(Kind::Bwrap));
    // A WSL2 kernel with landlock: both backends work.
    p.landlock = Sys::Ok(6);
    let r = dcjail::backend::doctor_report_with(&p);
    assert!(check(&r, "wsl").message.contains("landlock ABI 6 is on"));
    assert_eq!(r.overall(), Overall::Ok);
}

#[test]
fn wsl1_cannot_sandbox_and_says_how_to_convert() {
    let mut p = Fake::linux();
    p.kernel = "4.4.0-19041-Microsoft".into();
    p.file(
        "/proc/version",
        "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) #1237-Microsoft",
    );
    p.landlock = Sys::Err(libc::ENOSYS);
    let r = dcjail::backend::doctor_report_with(&p);
    let w = check(&r, "wsl");
    assert_eq!(w.status, Status::Fail);
    assert!(w
        .fix
        .as_deref()
        .unwrap()
        .contains("wsl --set-version <distribution> 2"));
    assert_eq!(dcjail::doctor::exit_status(&r), 122);
}

#[test]
fn bwrap_that_works_although_no_profile_is_found_is_said_not_hidden() {
    let mut p = Fake::ubuntu_2404();
    p.bwrap_run = Ok(());
    let r = dcjail::backend::doctor_report_with(&p);
    let c = check(&r, "apparmor-userns");
    assert_eq!(c.status, Status::Fail);
    assert!(
        c.message
            .contains("bwrap did create its namespaces just now"),
        "{}",
        c.message
    );
    // `auto` passes it over, so doctor does not call it working.
    assert!(!works(&r, Kind::Bwrap));
}

#[test]
fn an_ordinary_machine_has_no_obstacle() {
    let p = Fake::linux();
    assert_eq!(quick(&p), None);
    let r = dcjail::backend::doctor_report_with(&p);
    assert!(failing(&r).is_empty(), "{:#?}", r.checks);
    assert_eq!(r.overall(), Overall::Ok);
    assert_eq!(r.auto(), Some(Kind::Bwrap));
    let j = dcjail::doctor::to_json(&r);
    assert_eq!(j["status"], "ok");
    for c in j["checks"].as_array().unwrap() {
        for k in ["id", "status", "backends", "message", "fix"] {
            assert!(c.get(k).is_some(), "check without `{k}`: {c}");
        }
    }
}

#[test]
fn without_seccomp_user_notification_both_backends_run_without_a_broker_and_say_so() {
    // Under a filter that lets namespaces and landlock through but holds
    // the listener (this fake answers EBUSY under any filter): a dcjail
    // inside another sandbox that brokers its calls.
    let mut p = Fake::linux();
    p.filtered = true;
    p.ns = NsCalls::Filtered {
        unshare: Sys::Err(libc::EINVAL),
        clone: Sys::Err(libc::EINVAL),
    };
    let why = obstacle::listener_missing(&p).unwrap();
    assert!(
        why.starts_with("seccomp user notification is taken"),
        "{why}"
    );
    let r = dcjail::backend::doctor_report_with(&p);
    let c = check(&r, "seccomp-notify");
    assert_eq!(c.status, Status::Fail);
    assert_eq!(c.backends, vec![Kind::Bwrap, Kind::Landlock]);
    assert!(c
        .fix
        .as_deref()
        .unwrap()
        .contains("SECCOMP_FILTER_FLAG_NEW_LISTENER"));
    assert_eq!(r.overall(), Overall::Degraded);
    assert_eq!(r.auto(), Some(Kind::Bwrap));
    assert_eq!(dcjail::doctor::exit_status(&r), 0);
    for k in [Kind::Bwrap, Kind::Landlock] {
        let b = r.backends.iter().find(|b| b.kind == k).unwrap();
        assert!(b.works, "{k:?}");
        assert!(
            b.details
                .iter()
                .any(|d| d.starts_with("without seccomp user notification (")
                    && d.contains("a missing protected name kept uncreatable")),
            "{k:?}: {:?}",
            b.details
        );
    }
    // Unfiltered, nothing is tried and nothing is missing.
    assert_eq!(obstacle::listener_missing(&Fake::linux()), None);
}

#[test]
fn inside_another_dcjail_the_refusals_name_it_not_a_container() {
    // The outer dcjail's filter: namespaces refused (EPERM), the listener
    // taken, landlock through; its command's environment says DCJAIL=1.
    let mut p = Fake::linux();
    p.names.insert("/.dockerenv".into());
    p.filtered = true;
    p.ns = NsCalls::Filtered {
        unshare: Sys::Err(libc::EPERM),
        clone: Sys::Err(libc::EPERM),
    };
    p.bwrap_run = Err("bwrap: No permissions to create new namespace".into());
    // Without the outer's variables: a container's filter, as before.
    assert!(quick(&p)
        .unwrap()
        .message()
        .contains("inside a docker container"));
    p.env.insert("DCJAIL".into(), "1".into());
    p.env.insert("DCJAIL_BACKEND".into(), "bwrap".into());
    let o = quick(&p).unwrap();
    assert_eq!(
        o.to_string(),
        "inside another dcjail sandbox, whose seccomp filter refuses new namespaces (the outer \
         backend: bwrap): unshare with CLONE_NEWUSER failed with EPERM; fix: use --backend \
         landlock, which needs no namespace (auto chooses it here), or run this dcjail outside \
         the other one"
    );
    let r = dcjail::backend::doctor_report_with(&p);
    assert_eq!(
        check(&r, "nested").message,
        "running inside another dcjail sandbox (backend bwrap): its seccomp filter refuses new \
         namespaces and holds the seccomp listener; under landlock, the protected paths inside \
         the writable roots that the outer sandbox is checked at launch to hold are left to it \
         (layers.relied_on_outer), and a run that protects one it does not hold is refused"
    );
    let c = check(&r, "user-namespaces");
    assert!(
        c.message.starts_with(
            "inside another dcjail sandbox, whose seccomp filter refuses new namespaces"
        ),
        "{}",
        c.message
    );
    assert!(
        !c.fix.as_deref().unwrap().contains("seccomp="),
        "{:?}",
        c.fix
    );
    assert_eq!(r.auto(), Some(Kind::Landlock));
    // The variables without a seccomp filter are not believed.
    p.filtered = false;
    assert_eq!(obstacle::nested(&p), None);
    // A landlock refusal there does not send the user to bwrap.
    p.filtered = true;
    let (mut plan, dir) = make_plan(true);
    plan.backend = dcjail::policy::BackendChoice::Landlock;
    plan.fs.protected = vec![dir.join(".envrc")];
    let e = dcjail::backend::select_with(&plan, &p)
        .unwrap_err()
        .to_string();
    assert!(!e.contains("--backend bwrap"), "{e}");
    assert!(
        e.contains(&format!(
            "landlock cannot keep the protected path `{}/.envrc`",
            dir.display()
        )) && e.contains(
            "; bwrap, which would hold it, cannot run here: inside another dcjail sandbox, whose \
             seccomp filter refuses new namespaces (the outer backend: bwrap)"
        ),
        "{e}"
    );
}

/// Codex's sandbox with its network access off, as measured: a seccomp
/// filter that refuses every socket but AF_UNIX, user namespaces free, and
/// CODEX_SANDBOX_NETWORK_DISABLED=1; the user's capabilities all dropped.
fn codex_no_network(euid: u32) -> Fake {
    let mut f = Fake::linux();
    f.euid = euid;
    f.filtered = true;
    f.ns = NsCalls::Filtered {
        unshare: Sys::Err(libc::EINVAL),
        clone: Sys::Err(libc::EINVAL),
    };
    f.netlink = Sys::Err(libc::EPERM);
    f.env
        .insert("CODEX_SANDBOX_NETWORK_DISABLED".into(), "1".into());
    f.file(
        "/proc/self/status",
        "Name:\tdcjail\nCapEff:\t0000000000000000\n",
    );
    f
}

#[test]
fn inside_codex_without_network_bwrap_runs_without_a_network_namespace_and_says_why() {
    let f = codex_no_network(65534);
    assert_eq!(quick(&f), None);
    let why = obstacle::netns_missing(&f).unwrap();
    assert_eq!(
        why,
        "a seccomp filter refuses NETLINK_ROUTE sockets (socket(AF_NETLINK) failed with EPERM), \
         over which bubblewrap sets up a new network namespace's loopback; dcjail runs inside \
         Codex's sandbox with its network access off (CODEX_SANDBOX_NETWORK_DISABLED=1)"
    );
    assert!(obstacle::netns_fix(&f).starts_with("turn Codex's network access on"));
    let r = dcjail::backend::doctor_report_with(&f);
    assert!(works(&r, Kind::Bwrap));
    let c = check(&r, "network-namespace");
    assert_eq!(c.status, Status::Fail);
    assert!(c.message.starts_with(&why), "{}", c.message);
    // Without the variable: the same, in words that name no sandbox.
    let mut g = codex_no_network(65534);
    g.env.clear();
    assert!(obstacle::netns_missing(&g)
        .unwrap()
        .ends_with("a new network namespace's loopback"));
    assert!(obstacle::netns_fix(&g).starts_with("run dcjail where its seccomp filter allows"));
    // No filter: nothing but the kernel answers, and nothing is missing.
    let mut h = Fake::linux();
    h.env
        .insert("CODEX_SANDBOX_NETWORK_DISABLED".into(), "1".into());
    assert_eq!(obstacle::outer(&h), None);
}

#[test]
fn root_without_cap_setfcap_cannot_map_uid_0_and_is_told_so() {
    let f = codex_no_network(0);
    let o = quick(&f).unwrap();
    assert_eq!(
        o,
        Obstacle::RootWithoutSetfcap {
            container: None,
            outer: Some(obstacle::Outer::CodexNoNetwork)
        }
    );
    assert_eq!(o.check_id(), "user-namespaces");
    assert!(o
        .fix()
        .starts_with("run dcjail as a user other than root (start Codex as that user)"));
    // Before Linux 5.12 such a map was allowed; with CAP_SETFCAP it is.
    let mut old = codex_no_network(0);
    old.kernel = "5.10.0-28-amd64".into();
    assert_eq!(quick(&old), None);
    let mut capable = codex_no_network(0);
    capable.file("/proc/self/status", "CapEff:\t000001ffffffffff\n");
    assert_eq!(quick(&capable), None);
}

#[test]
fn inside_srt_the_user_namespace_limit_names_srts_setting() {
    let mut f = Fake::linux();
    f.filtered = true;
    f.file("/proc/sys/user/max_user_namespaces", "0\n");
    f.names.insert("/.dockerenv".into());
    f.env.insert("SANDBOX_RUNTIME".into(), "1".into());
    let o = quick(&f).unwrap();
    assert_eq!(
        o.message(),
        "user namespaces are disabled (user.max_user_namespaces = 0) inside srt, Anthropic's \
         sandbox runtime (SANDBOX_RUNTIME=1), which sets it to 0 for the commands it runs"
    );
    assert!(o
        .fix()
        .starts_with("set \"allowNestedUserNamespaces\": true in srt's settings"));
    // Unfiltered, the variable is not believed: the container is named.
    f.filtered = false;
    assert!(quick(&f).unwrap().message().contains("docker container"));
}

#[test]
fn a_masked_proc_that_keeps_bwrap_from_mounting_one_is_named() {
    let mut f = Fake::linux();
    f.filtered = true;
    f.env.insert("SANDBOX_RUNTIME".into(), "1".into());
    f.ns = NsCalls::Filtered {
        unshare: Sys::Err(libc::EINVAL),
        clone: Sys::Err(libc::EINVAL),
    };
    f.bwrap_run = Err("bwrap: Can't mount proc on /newroot/proc: Operation not permitted".into());
    let r = dcjail::backend::doctor_report_with(&f);
    let c = check(&r, "bwrap-sandbox");
    assert_eq!(c.status, Status::Fail);
    assert!(
        c.message.ends_with(
            "the kernel refuses a new /proc inside a user namespace while paths of the /proc \
             above are covered by other mounts, as container runtimes mask them; dcjail runs \
             inside srt, Anthropic's sandbox runtime (SANDBOX_RUNTIME=1), which passes such a \
             /proc on"
        ),
        "{}",
        c.message
    );
}
