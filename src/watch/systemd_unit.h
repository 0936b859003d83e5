// The systemd unit that runs `trainlock watch` on a node (`trainlock watch
// --print-systemd-unit`): the daemon restarted when it ends, SIGTERM's 143 a clean stop, the
// state directory its only writable path. Every value in ExecStart is a word the shell and
// systemd read alike (ShellQuote leaves it as it is, and no '%' specifier): one that is not is
// refused, never quoted into a form systemd reads otherwise.
#pragma once

#include <string>
#include <vector>

namespace trainlock {

struct WatchUnitOptions {
  std::string trainlock;          // the program's absolute path on the node
  std::vector<std::string> args;  // what follows `trainlock watch`
  std::string state_dir;          // made writable for the service
};

// The unit's text. Throws InputError (exit 2) naming a value systemd would not read as given.
std::string WatchSystemdUnit(const WatchUnitOptions& options);

}  // namespace trainlock
