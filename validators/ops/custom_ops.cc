// The ops worker: load, inspect and smoke-test custom-op libraries; see custom_ops.h.
#include "ops/custom_ops.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "base/file_stream.h"
#include "base/sha256.h"
#include "compat/gpu_binary.h"
#include "ops/op_references.h"
#include "ops/ops_check.h"
#include "support/pinned_files.h"

#if defined(TRAINLOCK_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

json OpFailure(const char* kind, const std::string& op, const std::string& message,
               const std::string& remedy) {
  return {{"kind", kind}, {"op", op}, {"message", message}, {"remedy", remedy}};
}

std::string FirstLine(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

std::optional<c10::OperatorHandle> FindOp(const std::string& qualified) {
  const size_t dot = qualified.find('.', qualified.find("::"));
  const std::string name = qualified.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : qualified.substr(dot + 1);
  auto found = c10::Dispatcher::singleton().findSchema({name, overload});  // c10::optional on 1.13
  if (!found) return std::nullopt;
  return *found;
}

// The ops registered under `qualified`'s namespace, for "did you mean" messages.
std::string OpsInNamespace(const std::string& qualified) {
  const std::string prefix = qualified.substr(0, qualified.find("::") + 2);
  std::vector<std::string> names;
  for (const c10::OperatorName& n : c10::Dispatcher::singleton().getAllOpNames()) {
    if (n.name.rfind(prefix, 0) == 0)
      names.push_back(n.name + (n.overload_name.empty() ? "" : "." + n.overload_name));
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none in " + prefix.substr(0, prefix.size() - 2) : out;
}

constexpr c10::DispatchKey kReportedKeys[] = {
    c10::DispatchKey::CPU,
    c10::DispatchKey::CUDA,
    c10::DispatchKey::Meta,
    c10::DispatchKey::CompositeImplicitAutograd,
    c10::DispatchKey::CompositeExplicitAutograd,
    c10::DispatchKey::AutogradCPU,
    c10::DispatchKey::AutogradCUDA,
};

std::vector<std::string> KernelKeys(const c10::OperatorHandle& op) {
  std::vector<std::string> keys;
  for (c10::DispatchKey k : kReportedKeys) {
    if (op.hasKernelForDispatchKey(k)) keys.push_back(c10::toString(k));
  }
  return keys;
}

// ROCm builds of LibTorch present HIP devices as CUDA devices, under the CUDA key.
c10::DispatchKey BackendKey(const torch::Device& device) {
  return device.is_cuda() ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU;
}

bool HasKernelFor(const c10::OperatorHandle& op, const torch::Device& device) {
  return op.hasKernelForDispatchKey(BackendKey(device)) ||
         op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) ||
         op.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
}

at::ScalarType ScalarTypeOf(const std::string& dtype) {
  if (dtype == "fp32") return at::kFloat;
  if (dtype == "bf16") return at::kBFloat16;
  if (dtype == "fp16") return at::kHalf;
  if (dtype == "fp64") return at::kDouble;
  if (dtype == "int64") return at::kLong;
  if (dtype == "int32") return at::kInt;
  throw SmokeProblem("unsupported dtype " + dtype);
}

// Seeded on the CPU and then moved, so every device tests the same values.
torch::Tensor MakeInput(const TensorSpec& spec, const torch::Device& device) {
  const at::ScalarType type = ScalarTypeOf(spec.dtype);
  torch::Tensor t = at::isFloatingType(type)
                        ? torch::randn(spec.shape).to(type)
                        : torch::randint(0, 64, spec.shape, torch::TensorOptions().dtype(type));
  return t.to(device);
}

// The op's arguments: the smoke inputs for its tensor parameters in order, the schema's
// defaults for the rest.
std::vector<c10::IValue> Arguments(const c10::FunctionSchema& schema,
                                   const std::vector<torch::Tensor>& inputs) {
  std::vector<c10::IValue> args;
  size_t next = 0;
  for (const c10::Argument& a : schema.arguments()) {
    if (a.type()->kind() == c10::TypeKind::TensorType && next < inputs.size()) {
      args.emplace_back(inputs[next++]);
    } else if (a.default_value()) {
      args.push_back(*a.default_value());
    } else {
      throw SmokeProblem("argument '" + a.name() +
                         "' has no default and the smoke spec gives no tensor for it");
    }
  }
  if (next < inputs.size()) {
    throw SmokeProblem("the smoke spec gives " + std::to_string(inputs.size()) +
                       " inputs; the op takes " + std::to_string(next) + " tensors");
  }
  return args;
}

torch::Tensor CallOp(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
  torch::jit::Stack stack(args.begin(), args.end());
  op.callBoxed(&stack);
  if (stack.empty() || !stack[0].isTensor()) throw SmokeProblem("the op returned no tensor");
  return stack[0].toTensor();
}

// Fresh leaves (floating inputs require grad) over the same values.
std::vector<torch::Tensor> Leaves(const std::vector<torch::Tensor>& inputs) {
  std::vector<torch::Tensor> leaves;
  for (const torch::Tensor& t : inputs) {
    torch::Tensor leaf = t.detach().clone();
    if (at::isFloatingType(leaf.scalar_type())) leaf.requires_grad_(true);
    leaves.push_back(leaf);
  }
  return leaves;
}

struct Comparison {
  double max_abs = 0, max_rel = 0;
  bool within = true;
};

Comparison Compare(const torch::Tensor& got, const torch::Tensor& want, double rtol, double atol) {
  Comparison c;
  if (got.sizes() != want.sizes()) {
    c.within = false;
    c.max_abs = c.max_rel = std::numeric_limits<double>::infinity();
    return c;
  }
  torch::Tensor g = got.detach().to(torch::kCPU, torch::kDouble);
  torch::Tensor w = want.detach().to(torch::kCPU, torch::kDouble);
  if (g.numel() == 0) return c;
  torch::Tensor diff = (g - w).abs();
  c.max_abs = diff.max().item<double>();
  c.max_rel = (diff / w.abs().clamp_min(1e-12)).max().item<double>();
  c.within = torch::allclose(g, w, rtol, atol, /*equal_nan=*/true);
  return c;
}

json ComparisonJson(const Comparison& c, double rtol, double atol) {
  return {{"max_abs_error", c.max_abs},
          {"max_rel_error", c.max_rel},
          {"rtol", rtol},
          {"atol", atol},
          {"within_tolerance", c.within}};
}

template <typename Work>
double MedianSecondsPerCall(Work work, const torch::Device& device) {
  auto sync = [&] {
#if defined(TRAINLOCK_WITH_CUDA)
    if (device.is_cuda()) torch::cuda::synchronize();
#else
    (void)device;
#endif
  };
  torch::NoGradGuard no_grad;
  for (int i = 0; i < 3; ++i) work();
  sync();
  std::vector<double> times;
  for (int i = 0; i < 20; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    sync();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::string Describe(const SmokeSpec& s) {
  std::string out;
  for (const TensorSpec& t : s.inputs) {
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    out += (out.empty() ? "" : ", ") + t.dtype + "[" + shape + "]";
  }
  return s.op + "(" + out + ")";
}

// One smoke test: forward and gradients against the reference, and time per call. Appends
// failures to `failures`.
json Smoke(const c10::OperatorHandle& op, const SmokeSpec& spec, const torch::Device& device,
           json& failures) {
  json out = {{"call", Describe(spec)}, {"reference", spec.reference}};
  const OpReference* reference = FindOpReference(spec.reference);
  if (!reference) {
    std::string known;
    for (const std::string& n : OpReferenceNames()) known += (known.empty() ? "" : ", ") + n;
    failures.push_back(
        OpFailure(op_failure::kUnknownReference, spec.op,
                  "no reference named '" + spec.reference + "' (known: " + known + ")",
                  "name one of the validator's references in the smoke spec"));
    return out;
  }
  try {
    torch::manual_seed(20261130);
    std::vector<torch::Tensor> inputs;
    for (const TensorSpec& t : spec.inputs) inputs.push_back(MakeInput(t, device));
    std::vector<torch::Tensor> op_leaves = Leaves(inputs), ref_leaves = Leaves(inputs);
    const std::vector<c10::IValue> op_args = Arguments(op.schema(), op_leaves);
    const std::vector<c10::IValue> ref_args = Arguments(op.schema(), ref_leaves);
    torch::Tensor got = CallOp(op, op_args);
    torch::Tensor want = (*reference)(ref_args).at(0);
    Comparison forward = Compare(got, want, spec.rtol, spec.atol);
    out["forward"] = ComparisonJson(forward, spec.rtol, spec.atol);
    if (!forward.within) {
      failures.push_back(
          OpFailure(op_failure::kForwardExceedsTolerance, spec.op,
                    Describe(spec) + " forward differs from reference " + spec.reference +
                        ": max abs error " + std::to_string(forward.max_abs) + ", max rel error " +
                        std::to_string(forward.max_rel) + " (rtol " + std::to_string(spec.rtol) +
                        ", atol " + std::to_string(spec.atol) + ")",
                    "the kernel computes something else than the reference: fix the kernel, or the "
                    "smoke spec's reference and tolerance if they are wrong"));
    }
    if (!got.requires_grad()) {
      failures.push_back(OpFailure(op_failure::kNoBackward, spec.op,
                                   Describe(spec) + " returns a tensor without a gradient function",
                                   "register an Autograd kernel (torch::autograd::Function) for "
                                   "the op"));
    } else {
      torch::Tensor grad_out = torch::randn(got.sizes()).to(got.scalar_type()).to(device);
      std::vector<torch::Tensor> op_in, ref_in;
      for (size_t i = 0; i < op_leaves.size(); ++i) {
        if (op_leaves[i].requires_grad()) {
          op_in.push_back(op_leaves[i]);
          ref_in.push_back(ref_leaves[i]);
        }
      }
      auto op_grads = torch::autograd::grad({got}, op_in, {grad_out}, false, false, true);
      auto ref_grads = torch::autograd::grad({want}, ref_in, {grad_out}, false, false, true);
      json backward = json::array();
      for (size_t i = 0; i < op_grads.size(); ++i) {
        if (!ref_grads[i].defined()) continue;
        Comparison g = op_grads[i].defined()
                           ? Compare(op_grads[i], ref_grads[i], spec.grad_rtol, spec.grad_atol)
                           : Comparison{std::numeric_limits<double>::infinity(),
                                        std::numeric_limits<double>::infinity(), false};
        json entry = ComparisonJson(g, spec.grad_rtol, spec.grad_atol);
        entry["input"] = i;
        backward.push_back(entry);
        if (!g.within) {
          failures.push_back(OpFailure(op_failure::kBackwardExceedsTolerance, spec.op,
                                       Describe(spec) + " gradient of input " + std::to_string(i) +
                                           " differs from reference " + spec.reference +
                                           ": max abs error " + std::to_string(g.max_abs) +
                                           " (grad-rtol " + std::to_string(spec.grad_rtol) +
                                           ", grad-atol " + std::to_string(spec.grad_atol) + ")",
                                       "the backward kernel is wrong or missing for this input"));
        }
      }
      out["backward"] = backward;
    }
    out["time_per_call_s"] = MedianSecondsPerCall([&] { (void)CallOp(op, op_args); }, device);
    out["reference_time_per_call_s"] =
        MedianSecondsPerCall([&] { (void)(*reference)(ref_args); }, device);
  } catch (const SmokeProblem& e) {
    failures.push_back(
        OpFailure(op_failure::kSmokeError, spec.op,
                  Describe(spec) + " cannot run as specified: " + FirstLine(e.what()),
                  "make the smoke spec's inputs match the op's schema and its "
                  "reference's arguments"));
  } catch (const std::exception& e) {
    failures.push_back(OpFailure(op_failure::kSmokeError, spec.op,
                                 Describe(spec) + " failed: " + FirstLine(e.what()),
                                 "the op must run on this device with the smoke spec's inputs"));
  }
  return out;
}

json CodeJson(const GpuBinaryInfo& code) {
  json ptx = json::array();
  for (const PtxEntry& p : code.ptx) ptx.push_back(p.arch);
  return {{"sass", code.sass}, {"ptx", ptx}, {"gfx", code.gfx}};
}

json CheckLibrary(const OpsLibrary& lib, const OpsDevice& device) {
  const fs::path path = lib.path;
  json out = {{"library", lib.library}, {"path", path.string()}};
  json failures = json::array();
  auto finish = [&] {
    out["failures"] = failures;
    return out;
  };
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    failures.push_back(OpFailure(op_failure::kLibraryMissing, "",
                                 lib.library + ": not found (looked for " + path.string() + ")",
                                 "build the library into the image at that path, or correct "
                                 "[[custom-ops]].library"));
    return finish();
  }
  // The library is opened once; the bytes hashed and the bytes loaded are those of that one
  // open file: dlopen goes through /proc/self/fd/N, not the path, so a file swapped in at the
  // path between hashing and loading is never loaded. dlopen reopens that name without
  // O_NONBLOCK, so a FIFO or a device (an unpinned one hashes as whatever a read returns) must
  // be refused by type here, before anything can block on it: OpenRegularFile opens without
  // blocking and takes only a regular file.
  ScopedFd fd;
  try {
    fd = OpenRegularFile(path);
  } catch (const StreamError& e) {
    failures.push_back(OpFailure(op_failure::kLibraryLoadFailed, "",
                                 lib.library + ": cannot be loaded (" + e.what() + ")",
                                 "make the library a readable regular file"));
    return finish();
  }
  const fs::path opened = "/proc/self/fd/" + std::to_string(fd.get());
  try {
    Sha256 hash;
    const uint64_t bytes =
        StreamDescriptor(fd.get(), path, [&](std::string_view c) { hash.Update(c); });
    // A library built from source in the image has no pinned hash (lib.sha256 ""): measured
    // and recorded, not compared.
    VerifyPinned(path.string(), hash.HexDigest(), bytes, lib.sha256);
  } catch (const ArtifactMismatch& e) {
    failures.push_back(OpFailure(op_failure::kLibraryChanged, "", e.what(),
                                 "install the library the lock pins, or re-lock (`trainlock lock`) "
                                 "if the change is intended"));
    return finish();
  } catch (const std::exception& e) {
    failures.push_back(OpFailure(op_failure::kLibraryLoadFailed, "", lib.library + ": " + e.what(),
                                 "make the library a readable regular file"));
    return finish();
  }
  if (!::dlopen(opened.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    const char* error = ::dlerror();
    failures.push_back(OpFailure(
        op_failure::kLibraryLoadFailed, "", lib.library + ": " + (error ? error : "dlopen failed"),
        "the loader names the missing dependency or symbol: build the library against this "
        "image's LibTorch and make its dependencies resolvable (LD_LIBRARY_PATH, rpath)"));
    return finish();
  }
  // The device must be able to run the library's GPU code before any op is called.
  bool code_runs = true;
  try {
    GpuBinaryInfo code = InspectGpuBinary(opened);  // the verified file, not the path again
    out["code"] = CodeJson(code);
    if (device.device.is_cuda() && device.sm > 0) {
      if (auto problem = CudaCodeProblem(code, device.sm, device.driver_cuda)) {
        code_runs = false;
        failures.push_back(
            OpFailure(op_failure::kNoCodeForDevice, "", lib.library + ": " + *problem,
                      "rebuild it for this GPU (-gencode arch=compute_" +
                          std::to_string(device.sm) + ",code=sm_" + std::to_string(device.sm) +
                          ") or embed PTX it can JIT; "
                          "`trainlock archs DIR --target cuda` prints the lock's architectures"));
      }
    }
  } catch (const std::exception& e) {
    out["code"] = {{"error", FirstLine(e.what())}};
  }
  json ops = json::array();
  for (const std::string& name : lib.ops) {
    json op_out = {{"op", name}};
    std::optional<c10::OperatorHandle> op = FindOp(name);
    if (!op) {
      failures.push_back(OpFailure(op_failure::kOpNotRegistered, name,
                                   name + " is not registered after loading " + lib.library +
                                       " (registered: " + OpsInNamespace(name) + ")",
                                   "register it with TORCH_LIBRARY in the library, or correct the "
                                   "lock's op name"));
      ops.push_back(op_out);
      continue;
    }
    op_out["schema"] = c10::toString(op->schema());
    op_out["kernel_keys"] = KernelKeys(*op);
    if (!HasKernelFor(*op, device.device)) {
      failures.push_back(OpFailure(
          op_failure::kNoKernelForDevice, name,
          name + " has no kernel for the " + c10::toString(BackendKey(device.device)) +
              " dispatch key of device " + device.device.str() + " (kernels: " +
              [&] {
                std::string keys;
                for (const std::string& k : KernelKeys(*op)) keys += (keys.empty() ? "" : ", ") + k;
                return keys.empty() ? std::string("none") : keys;
              }() +
              ")",
          "build the library with a kernel for this device (TORCH_LIBRARY_IMPL(ns, " +
              std::string(c10::toString(BackendKey(device.device))) + ", m))"));
    } else if (code_runs) {
      json smoke = json::array();
      for (const SmokeSpec& spec : lib.smoke) {
        if (spec.op == name) smoke.push_back(Smoke(*op, spec, device.device, failures));
      }
      op_out["smoke"] = smoke;
    }
    ops.push_back(op_out);
  }
  out["ops"] = ops;
  return finish();
}

}  // namespace

OpsDevice DescribeOpsDevice(torch::Device device) {
  OpsDevice d{device, 0, 0};
#if defined(TRAINLOCK_WITH_CUDA)
  if (device.is_cuda()) {
    const auto* props = at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0);
    d.sm = props->major * 10 + props->minor;
    if (cudaDriverGetVersion(&d.driver_cuda) != cudaSuccess) d.driver_cuda = 0;
  }
#endif
  return d;
}

json RunCustomOps(const std::vector<OpsLibrary>& libraries, const OpsDevice& device) {
  json checked = json::array();
  for (const OpsLibrary& lib : libraries) checked.push_back(CheckLibrary(lib, device));
  return {{"device", device.device.str()},
          {"sm", device.sm},
          {"driver_cuda", device.driver_cuda},
          {"libraries", checked}};
}

}  // namespace trainlock::validate
