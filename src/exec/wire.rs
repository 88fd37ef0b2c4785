//! The allowlist proxy wired to a launch: `net` starts the proxy and hands
//! back its endpoint as data, the backend's pure `Launch::with_proxy_port`
//! puts the port into the rendered launch (the landlock port rule, the
//! Seatbelt profile's `PROXY` parameter). Neither module names the other.

use crate::backend::Launch;
use crate::net::{NetRun, Way};
use crate::plan::Plan;
use crate::policy::NetMode;

/// Starts the allowlist proxy when the plan asks for one and wires the
/// launch to it; nothing when the network is not an allowlist.
pub fn start_net(
    plan: &Plan,
    launch: &mut Launch,
    creds: Option<&crate::net::creds::Prepared>,
) -> Result<NetRun, String> {
    if plan.effective_net() != NetMode::Allowlist {
        return Ok(NetRun::default());
    }
    let way = match launch {
        Launch::Unsandboxed => return Err("network allowlist needs a sandbox backend".into()),
        Launch::Bwrap(_) => Way::Netns {
            port: crate::backend::bwrap::SANDBOX_PROXY_PORT,
        },
        _ => Way::Loopback,
    };
    let net = crate::net::start(plan, way, creds)?;
    if let Some(port) = net.port {
        launch.with_proxy_port(port);
    }
    Ok(net)
}
