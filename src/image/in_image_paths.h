// Where things live inside an image that trainlock builds, and where `trainlock validate
// --image` mounts the project and the report directory: the one place these paths are spelled.
// The Containerfile templates (images/*.in) take them as @PROJECT_IN_IMAGE@ and
// @VALIDATOR_IN_IMAGE@; the generator, the fleet jobs, `validate --image` and the validator's
// image binding read them from here.
#pragma once

namespace trainlock {

// The project as baked into the image: trainlock.lock, trainlock.toml, the training config,
// image.json and relative custom-op libraries.
inline constexpr const char* kProjectInImage = "/etc/trainlock";
// On a host the node gates read each project's lock from a folder of this directory too
// (fleet.h's NodeLockPath): trainlock's configuration directory, in an image or not.
// The image's record of its own build (image_record.h).
inline constexpr const char* kImageRecordInImage = "/etc/trainlock/image.json";
// The validator binary, also the image's entrypoint.
inline constexpr const char* kValidatorInImage = "/usr/local/bin/trainlock-validate";

// The image's Python: the venv the lock's closure is installed into (the Containerfile
// templates create it there); env.packages asks it where its packages are.
inline constexpr const char* kPythonInImage = "/opt/venv/bin/python3";

// Every file the image's Python can load, recorded at build time by `trainlock-validate
// record-python-files` (checks/python_files.h) and verified by the validator before any Python
// starts.
inline constexpr const char* kPythonFilesInImage = "/etc/trainlock/python-files.json";

// The Python engines of the round trip (project/round_trip_engines.h), installed from the
// copy compiled into trainlock; the validator verifies them against the lock before running.
inline constexpr const char* kEnginesInImage = "/opt/trainlock/engines";

// Where the Debian step downloads the pinned .debs (and what they depend on) while it compares
// them with the lock and installs them; removed by that step, so no image keeps it.
inline constexpr const char* kDebianDownloadsInImage = "/tmp/trainlock-debs";

// `trainlock watch`'s state on a node: one revocation record per node (watch/node_record.h),
// which `trainlock gate --watch-state` and the node gates read.
inline constexpr const char* kWatchStateDir = "/var/lib/trainlock/watch";

// `trainlock validate --image`: the host's project directory (read-only) and the directory the
// validator writes its report into, as the container sees them.
inline constexpr const char* kProjectMountInContainer = "/trainlock/project";
inline constexpr const char* kReportMountInContainer = "/trainlock/out";

}  // namespace trainlock
