// What the `trainlock` subcommands share; see commands.h.
#include "cli/commands.h"

namespace trainlock::cli {

Catalog LoadCatalog(const GlobalOptions& global) {
  return global.catalog_dir.empty() ? Catalog::Embedded()
                                    : Catalog::FromDirectory(global.catalog_dir);
}

}  // namespace trainlock::cli
