# dcjail-bwrap: lets one bubblewrap create user namespaces where AppArmor
# restricts them (kernel.apparmor_restrict_unprivileged_userns = 1, the
# default on Ubuntu 24.04 and later). Written by `dcjail setup apparmor` for
# the bubblewrap dcjail runs on this machine:
#
#     /usr/local/bin/bwrap
#
# What it grants, and to what:
# - dcjail-bwrap, that one program: what it had before the restriction
#   (it ran unconfined), with `userns`, so that it can build the sandbox's
#   namespaces and mount tree as root of its own user namespace.
# - dcjail-bwrap-child, everything bwrap starts (dcjail's second stage, then
#   the command): stacked on the first, with no capability, no new user
#   namespace, no mount. bwrap cannot be used to hand a privileged namespace
#   to another program, and nothing inside holds more than an unconfined
#   program did before the restriction; dcjail's own seccomp filter and
#   landlock layer narrow that further.
#
# Install and load:  sudo dcjail setup apparmor --install
#   or by hand:      dcjail setup apparmor | sudo tee /etc/apparmor.d/dcjail-bwrap >/dev/null
#                    sudo apparmor_parser -r /etc/apparmor.d/dcjail-bwrap
# Remove:            sudo apparmor_parser -R /etc/apparmor.d/dcjail-bwrap
#                    sudo rm /etc/apparmor.d/dcjail-bwrap

abi <abi/4.0>,

include <tunables/global>

profile dcjail-bwrap /usr/local/bin/bwrap flags=(attach_disconnected,mediate_deleted) {
  # Building the sandbox: a user namespace, root inside it, mounts.
  allow userns,
  allow capability,
  allow mount,
  allow umount,
  allow pivot_root,
  allow file rwlkm /{**,},
  allow network,
  allow unix,
  allow signal,
  allow ptrace,
  allow mqueue,

  # bwrap runs with no_new_privs, under which an exec may only narrow its
  # confinement: the child profile is stacked on this one, not swapped in.
  allow pix /** -> &dcjail-bwrap//&dcjail-bwrap-child,
}

profile dcjail-bwrap-child flags=(attach_disconnected,mediate_deleted) {
  allow file rwlkm /{**,},
  allow network,
  allow unix,
  allow signal,
  allow ptrace,
  allow mqueue,
  allow dbus,

  # Programs the command runs stay under this profile.
  allow pix /** -> &dcjail-bwrap-child,

  # No privilege inside the namespace: what the restriction is for.
  audit deny capability,
}
