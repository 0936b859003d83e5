// `trainlock image generate DIR --target cuda|rocm`: write the target's Containerfile and
// requirements.txt (image_generate.h).
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "exit_code.h"
#include "file_io.h"
#include "image_generate.h"
#include "project.h"

namespace trainlock::cli {
namespace {

struct GenerateOptions {
  std::string dir = ".";
  std::string out;  // "" = DIR/.trainlock/image-<target>
  ImageOptions image;
};

int RunGenerate(GenerateOptions options) {
  if (options.image.source_date_epoch < 0) {
    if (const char* env = std::getenv("SOURCE_DATE_EPOCH")) {
      char* end = nullptr;
      long long v = std::strtoll(env, &end, 10);
      if (!*env || *end || v < 0) {
        std::cerr << "SOURCE_DATE_EPOCH: error: '" << env << "' is not a non-negative integer\n";
        return kExitBadInput;
      }
      options.image.source_date_epoch = v;
    }
  }
  Project project = LoadProject(options.dir);
  auto files = GenerateImage(project, options.image);
  const std::filesystem::path out =
      options.out.empty()
          ? std::filesystem::path(options.dir) / ".trainlock" / ("image-" + options.image.target)
          : std::filesystem::path(options.out);
  std::filesystem::create_directories(out);
  for (const auto& [name, text] : files) {
    WriteFileAtomically(out / name, text);
    std::cout << "wrote " << (out / name).string() << "\n";
  }
  return kExitOk;
}

}  // namespace

Command RegisterImage(CLI::App& app, const GlobalOptions&) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* image = app.add_subcommand("image", "Generate the container image of a lock's target");
  image->require_subcommand(1);
  CLI::App* generate = image->add_subcommand(
      "generate",
      "Write DIR/.trainlock/image-<target>/Containerfile and requirements.txt from the lock and\n"
      "the template in images/: FROM the digest-pinned base, OS packages from the dated\n"
      "snapshot archive of SOURCE_DATE_EPOCH, torch and [python] at exact versions, a builder\n"
      "stage compiling trainlock-validate against the image's own torch, lock and config in\n"
      "/etc/trainlock/, OCI labels, the validator as entrypoint. The same inputs give\n"
      "byte-identical files.");
  generate->add_option("DIR", options->dir, "Project directory")->capture_default_str();
  generate->add_option("--target", options->image.target, "cuda or rocm")->required();
  generate->add_option("--out", options->out, "Output directory");
  generate->add_option("--source-date-epoch", options->image.source_date_epoch,
                       "Build time in seconds since 1970 (default: $SOURCE_DATE_EPOCH)");
  generate->add_option("--source", options->image.source, "org.opencontainers.image.source");
  generate->add_option("--revision", options->image.revision, "org.opencontainers.image.revision");
  generate->add_option("--image-ref", options->image.image_ref,
                       "The name the image will be pushed as");
  return [options] { return RunGenerate(*options); };
}

}  // namespace trainlock::cli
