//! Anthropic's sandbox runtime (`srt --settings FILE`, `~/.srt-settings.json`).
//!
//! srt reads everywhere but `denyRead` (with `allowRead` re-opened inside
//! it), writes only `allowWrite` minus `denyWrite`, and reaches only
//! `allowedDomains` minus `deniedDomains` through its proxy; an empty
//! `allowedDomains` means no network. Relative paths are relative to the
//! current directory, which is dcjail's default workspace.

use super::{is_glob, Cx, Imported, Obj};
use crate::error::Result;
use crate::policy::{NetMode, SandboxMode};
use std::path::PathBuf;

const READS: &str = "filesystem.{denyRead, allowRead, allowWrite, denyWrite}, \
network.{allowedDomains, deniedDomains, allowAllUnixSockets}, and, only when off or empty, \
network.{allowUnixSockets, allowLocalBinding}, ignoreViolations, enableWeakerNestedSandbox, \
enableWeakerNetworkIsolation, allowAppleEvents";

pub(super) fn convert(cx: &Cx, imp: &mut Imported) -> Result<()> {
    let top = cx.json_object()?;
    let mut o = Obj::new(&top, "");
    if let Some(mut fs) = o.object(cx, "filesystem")? {
        filesystem(cx, imp, &mut fs)?;
        fs.finish(cx, READS)?;
    } else {
        read_only(cx, imp);
    }
    match o.object(cx, "network")? {
        Some(mut net) => {
            network(cx, imp, &mut net)?;
            net.finish(cx, READS)?;
        }
        None => {
            imp.policy.sandbox.network.mode = NetMode::None;
            cx.origin(imp, "sandbox.network.mode", "network.allowedDomains");
        }
    }
    o.empty(
        cx,
        "ignoreViolations",
        "dcjail records every denial and hides none; remove the list",
    )?;
    for k in [
        "enableWeakerNestedSandbox",
        "enableWeakerNetworkIsolation",
        "allowAppleEvents",
    ] {
        o.only(
            cx,
            k,
            false,
            "dcjail never weakens its sandbox; set it to false",
        )?;
    }
    o.finish(cx, READS)
}

fn read_only(cx: &Cx, imp: &mut Imported) {
    imp.policy.sandbox.mode = SandboxMode::ReadOnly;
    cx.origin(imp, "sandbox.mode", "filesystem.allowWrite");
}

fn filesystem(cx: &Cx, imp: &mut Imported, fs: &mut Obj) -> Result<()> {
    let f = &mut imp.policy.sandbox.filesystem;
    f.deny_read = fs
        .strings(cx, "denyRead")?
        .into_iter()
        .map(PathBuf::from)
        .collect();
    f.allow_read = fs
        .strings(cx, "allowRead")?
        .into_iter()
        .map(PathBuf::from)
        .collect();
    f.deny_write = fs
        .strings(cx, "denyWrite")?
        .into_iter()
        .map(PathBuf::from)
        .collect();
    let allow_write = fs.strings(cx, "allowWrite")?;
    for (field, key, set) in [
        ("deny_read", "denyRead", !f.deny_read.is_empty()),
        ("allow_read", "allowRead", !f.allow_read.is_empty()),
        ("deny_write", "denyWrite", !f.deny_write.is_empty()),
    ] {
        if set {
            cx.origin(
                imp,
                &format!("sandbox.filesystem.{field}"),
                &format!("filesystem.{key}"),
            );
        }
    }
    if allow_write.is_empty() {
        read_only(cx, imp);
        return Ok(());
    }
    let key = fs.key("allowWrite");
    let cwd = |s: &str| matches!(s.trim_end_matches('/'), "" | ".");
    if !allow_write.iter().any(|s| cwd(s)) {
        return Err(cx.err(
            &key,
            "dcjail's workspace-write always lets the command write its workspace (the current \
             directory), so a list without `.` cannot be honoured: add `.`, or leave the list \
             empty for no writes",
        ));
    }
    let mut extra = Vec::new();
    for s in allow_write.iter().filter(|s| !cwd(s)) {
        if is_glob(s) {
            return Err(cx.err(
                &key,
                format!("`{s}` is a glob; dcjail's writable roots are directories or files"),
            ));
        }
        extra.push(PathBuf::from(s));
    }
    imp.policy.sandbox.mode = SandboxMode::WorkspaceWrite;
    cx.origin(imp, "sandbox.mode", "filesystem.allowWrite");
    if !extra.is_empty() {
        imp.policy.sandbox.filesystem.allow_write = extra;
        cx.origin(
            imp,
            "sandbox.filesystem.allow_write",
            "filesystem.allowWrite",
        );
    }
    Ok(())
}

fn network(cx: &Cx, imp: &mut Imported, net: &mut Obj) -> Result<()> {
    let allowed = net.strings(cx, "allowedDomains")?;
    let mut denied = net.strings(cx, "deniedDomains")?;
    // A bare `*` denies every destination: that is no network at all.
    let deny_all = denied.iter().any(|d| d == "*");
    denied.retain(|d| d != "*");
    for (k, list) in [("allowedDomains", &allowed), ("deniedDomains", &denied)] {
        for d in list {
            crate::net::domain::DomainRule::parse(d).map_err(|e| cx.err(&net.key(k), e))?;
        }
    }
    let n = &mut imp.policy.sandbox.network;
    n.mode = if allowed.is_empty() || deny_all {
        NetMode::None
    } else {
        NetMode::Allowlist
    };
    // With no network the allowed names mean nothing, and a policy that
    // keeps them beside `mode = "none"` contradicts itself.
    let allowed = if deny_all { Vec::new() } else { allowed };
    let has_allowed = !allowed.is_empty();
    let has_denied = !denied.is_empty();
    n.allow_domains = allowed;
    n.deny_domains = denied;
    cx.origin(imp, "sandbox.network.mode", &net.key("allowedDomains"));
    if deny_all {
        cx.origin(imp, "sandbox.network.mode", &net.key("deniedDomains"));
    }
    if has_allowed {
        cx.origin(
            imp,
            "sandbox.network.allow_domains",
            &net.key("allowedDomains"),
        );
    }
    if has_denied {
        cx.origin(
            imp,
            "sandbox.network.deny_domains",
            &net.key("deniedDomains"),
        );
    }
    super::unix_sockets(cx, imp, net)?;
    net.only(
        cx,
        "allowLocalBinding",
        false,
        "dcjail's sandbox cannot listen on a local port; set it to false",
    )
}
